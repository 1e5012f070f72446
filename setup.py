"""The one native part: the relay thread's hot step (actors/ptyd/_relaystep.c, issue 24).

Optional: without a C compiler the install goes on and ptyd's relay runs its Python
step (actors/ptyd/relay.py), slower by the figures in bench/pty.py.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "actors.ptyd._relaystep",
            ["actors/ptyd/_relaystep.c"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        )
    ]
)
