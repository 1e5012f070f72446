"""SSH targets, ssh's command lines and its failures read back (``orca.remote.ssh``)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orca.keys import KeyPair
from orca.paths import resolve_paths
from orca.remote import hosts, ssh


def test_an_ssh_url_and_an_alias_become_ssh_destinations() -> None:
    url = ssh.parse_target("ssh://deploy@build.example:2222")
    assert (url.destination, url.port, url.target_id) == ("deploy@build.example", 2222, "deploy@build.example:2222")
    assert ssh.parse_target("ssh://[fd00::2]").destination == "fd00::2"
    alias = ssh.parse_target("buildbox")
    assert (alias.destination, alias.port, alias.orca) == ("buildbox", None, "orca")


@pytest.mark.parametrize(
    "text",
    ["-oProxyCommand=touch /tmp/x", "ssh://-oProxy@x", "ssh://u@-x", "box;rm -rf /", "a b",
     "ssh://u@h:0", "ssh://u@h:70000", "ssh://u@h:", "", "ssh://u@h/path"],
)  # fmt: skip
def test_targets_ssh_would_read_as_options_or_a_shell_would_split_are_refused(text: str) -> None:
    with pytest.raises(ssh.SshConfigError):
        ssh.parse_target(text)


@given(st.text(max_size=40))
def test_whatever_is_accepted_is_one_plain_argument_that_is_no_option(text: str) -> None:
    try:
        target = ssh.parse_target(text)
    except ssh.SshConfigError:
        return
    assert not target.destination.startswith("-")
    assert shlex.split(target.destination) == [target.destination]


def test_the_remote_command_quotes_orca_and_says_when_it_is_missing() -> None:
    line = ssh.remote_command("/opt/my orca/bin/orca", "host", "ssh-accept", "--", "-key'$x")
    assert "'/opt/my orca/bin/orca' host ssh-accept -- '-key'\"'\"'$x'" in line
    assert f"echo {ssh.ORCA_MISSING}; exit {ssh.ORCA_MISSING_EXIT}" in line
    assert ssh.link_command("orca").endswith("host ssh-info && exec cat >/dev/null")
    with pytest.raises(ssh.SshConfigError):
        ssh.check_remote_orca("-x")


def test_the_command_line_shares_one_control_socket_and_never_prompts_a_daemon(tmp_path: Path) -> None:
    target = ssh.SshTarget("root@box", 2222, "/etc/orca-ssh.conf")
    argv = ssh.ssh_argv(target, tmp_path / "c", batch=True, master=True, alive=(5, 4))
    joined = " ".join(argv)
    assert argv[:5] == ["ssh", "-F", "/etc/orca-ssh.conf", "-p", "2222"]
    for option in (f"ControlPath={tmp_path / 'c'}", "ControlMaster=yes", "ControlPersist=no",
                   "StreamLocalBindMask=0177", "BatchMode=yes", "ServerAliveInterval=5",
                   "ServerAliveCountMax=4"):  # fmt: skip
        assert f"-o {option}" in joined
    cli = ssh.ssh_argv(target, tmp_path / "c", batch=False)
    assert "ControlMaster=auto" in cli and "BatchMode=yes" not in cli


@pytest.mark.parametrize(
    ("code", "stdout", "stderr", "what"),
    [
        (255, "", "ssh: connect to host 10.0.0.2 port 22: Connection refused\n", ssh.SSH_REFUSED),
        (255, "", "root@10.0.0.2: Permission denied (publickey).\n", ssh.AUTH_FAILED),
        (255, "", "@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n"
         "Host key verification failed.\n", ssh.HOST_KEY_CHANGED),
        (255, "", "No ED25519 host key is known for [10.0.0.2]:22 and you have requested strict"
         " checking.\nHost key verification failed.\n", ssh.HOST_KEY_UNKNOWN),
        (255, "", "ssh: connect to host 10.0.0.2 port 22: No route to host\n", ssh.UNREACHABLE),
        (255, "", "Timeout, server 10.0.0.2 not responding.\n", ssh.UNREACHABLE),
        (127, "orca-missing\n", "", ssh.ORCA_MISSING_THERE),
        (255, "", "something new\n", ssh.SSH_FAILED),
    ],
)  # fmt: skip
def test_ssh_failures_are_named(code: int, stdout: str, stderr: str, what: str) -> None:
    named, detail = ssh.classify(code, stdout, stderr)
    assert named == what and detail


def test_the_remote_answer_is_parsed_or_refused() -> None:
    info = ssh.RemoteInfo("0.1.0", 1, True, "k" * 40, "/run/orca/gateway.remote")
    assert ssh.RemoteInfo.parse(info.to_json()) == info
    for line in ("", "not json", '{"orca": "1"}', info.to_json().replace("/run", "run")):
        with pytest.raises(ssh.SshConfigError):
            ssh.RemoteInfo.parse(line)


def test_socket_paths_fit_a_unix_socket_even_under_a_deep_home(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    paths = resolve_paths({"ORCA_HOME": str(deep)})
    control = ssh.control_path(paths, "h" * 63)
    assert len(str(control)) + 17 <= 107  # ssh's temporary name while it binds
    assert control == ssh.control_path(paths, "h" * 63), "deterministic per home and host"
    assert ssh.forward_path(paths, "a") != ssh.forward_path(paths, "b")
    directory = ssh.ssh_dir(resolve_paths({"ORCA_HOME": str(tmp_path)}).ensure())
    assert directory.stat().st_mode & 0o777 == 0o700


def test_an_ssh_host_is_recorded_with_its_target_and_an_ssh_host_id(tmp_path: Path) -> None:
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)}).ensure()
    key = KeyPair.generate().public.decode()
    target = ssh.SshTarget("root@box", 2222, None, "orca", "/tmp/orca-0/x/gateway.remote")
    host = hosts.add_ssh_host(paths, "box", target, key)
    loaded = hosts.load_hosts(paths)["box"]
    assert loaded == host and loaded.ssh == target
    assert loaded.host_id == "ssh:box" and loaded.endpoint == ssh.forward_endpoint(paths, "box")
    assert hosts.split_remote_ref(paths, "box:repo:e187") == (host, "repo:e187")
    # An entry whose ssh part does not validate is skipped, never half-trusted.
    raw = hosts.known_hosts_path(paths).read_text().replace("root@box", "-oProxyCommand=x")
    hosts.known_hosts_path(paths).write_text(raw)
    assert hosts.load_hosts(paths) == {}
