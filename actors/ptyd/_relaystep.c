/* The relay thread's hot step, without the GIL (issue 24; relay.py tells the design).
 *
 * One call polls what the relay thread polls and does the two things a keystroke's
 * echo needs, with no Python in between:
 *
 *   a handed terminal's keys -> the master (unless they hold the detach key);
 *   the master's output -> the pipe -> the journal (splice, splice, pread: the same
 *   kill -9 guarantee as Session._take_spliced) -> every terminal that may be written
 *   plain text now (when the batch holds no ESC and the caller said plain is safe).
 *
 * Everything else it hands back to Python: poll events it did not act on, keys with the
 * detach key (or an end), keys the master did not take, what a failed journal splice
 * left in the pipe, and the batch itself (Python scans it, queues it for the loop and
 * writes it where this step did not). Keys alone do not end a step: it polls on, for
 * at most KEY_WAIT_MS, so the key's echo follows it without the GIL too.
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_FDS 256
#define KEY_READ 4096
#define KEY_WAIT_MS 10
#define MAX_DETACH 16

typedef struct {
    int fd;
    int events;
} Watch;

typedef struct {
    int fd;
    int detach_len;
    char detach[MAX_DETACH];
} KeyTty;

/* What one step found, gathered without the GIL and turned into objects after. */
typedef struct {
    struct pollfd back[MAX_FDS]; /* events for Python */
    int nback;
    Py_ssize_t got;              /* batch bytes journaled, in buf */
    long long written[MAX_FDS];  /* per live fd; -1: the write failed (not EAGAIN) */
    int wrote;                   /* the batch went to the live terminals */
    int ended;
    Py_ssize_t pipe_left;        /* spliced into the pipe, not journaled */
    Py_ssize_t unread;           /* journaled after the batch, not read back (EIO) */
    int error;                   /* poll's errno: raised once the GIL is back */
    int typed[MAX_FDS];
    int ntyped;
    int raw_fd[MAX_FDS];         /* keys for Python: detach key, end, or not taken */
    char *raw[MAX_FDS];
    Py_ssize_t raw_len[MAX_FDS];
    int raw_left[MAX_FDS];       /* 1: keys the master did not take (no detach key) */
    int nraw;
} Found;

typedef struct {
    PyObject_HEAD
    int master, pipe_r, pipe_w;
    Py_ssize_t read_size, small_read;
    char *buf;
    Watch watch[MAX_FDS];
    int nwatch;
    int live[MAX_FDS];
    int nlive;
    KeyTty keys[MAX_FDS];
    int nkeys;
    Found found; /* the current step's (its arrays are read only up to its counts) */
} Step;

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void back(Found *f, int fd, short revents) {
    if (revents && f->nback < MAX_FDS) {
        f->back[f->nback].fd = fd;
        f->back[f->nback].revents = revents;
        f->nback++;
    }
}

static int contains(const char *hay, Py_ssize_t n, const char *needle, int m) {
    return m > 0 && n >= m && memmem(hay, (size_t)n, needle, (size_t)m) != NULL;
}

static void keep_raw(Found *f, int fd, const char *data, Py_ssize_t n, int left) {
    if (f->nraw >= MAX_FDS)
        return;
    char *copy = NULL;
    if (n > 0) {
        copy = malloc((size_t)n);
        if (copy == NULL)
            return;
        memcpy(copy, data, (size_t)n);
    }
    f->raw_fd[f->nraw] = fd;
    f->raw[f->nraw] = copy;
    f->raw_len[f->nraw] = n;
    f->raw_left[f->nraw] = left;
    f->nraw++;
}

/* Keys of one terminal: 1 if they were all written to the master, -1 if only some (the
 * rest is Python's: no other terminal's keys may go before it), 0 if Python must see them. */
static int take_keys(Step *s, Found *f, KeyTty *k) {
    char keys[KEY_READ];
    ssize_t n = read(k->fd, keys, sizeof keys);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n <= 0 || contains(keys, n, k->detach, k->detach_len)) {
        keep_raw(f, k->fd, keys, n < 0 ? 0 : n, 0);
        return 0;
    }
    ssize_t done = 0;
    while (done < n) {
        ssize_t w = write(s->master, keys + done, (size_t)(n - done));
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EIO)
                done = n; /* the PTY hung up: the keys have nowhere to go */
            break;
        }
        if (w == 0)
            break;
        done += w;
    }
    if (done < n) {
        keep_raw(f, k->fd, keys + done, n - done, 1);
        return -1;
    }
    if (f->ntyped < MAX_FDS)
        f->typed[f->ntyped++] = k->fd;
    return 1;
}

/* The master's output into the pipe, the journal and buf; 0 if Python must read it. */
static int take_output(Step *s, Found *f, int journal_fd, long long journal_off) {
    Py_ssize_t moved = 0;
    while (moved < s->read_size) {
        ssize_t n = splice(s->master, NULL, s->pipe_w, NULL, (size_t)(s->read_size - moved),
                           SPLICE_F_NONBLOCK);
        if (n < 0) {
            if (errno == EAGAIN)
                break;
            if (errno == EINTR)
                continue;
            if (errno == EIO) {
                f->ended = 1;
                break;
            }
            f->pipe_left = moved; /* EINVAL and the like: Python's take_raw decides */
            return 0;
        }
        if (n == 0) {
            f->ended = 1;
            break;
        }
        moved += n;
        if (n < s->small_read)
            break; /* a key's echo: no second splice to learn the master is empty */
    }
    Py_ssize_t got = 0;
    while (got < moved) {
        loff_t off = (loff_t)(journal_off + got);
        ssize_t k = splice(s->pipe_r, NULL, journal_fd, &off, (size_t)(moved - got), 0);
        if (k <= 0) {
            if (k < 0 && errno == EINTR)
                continue;
            break; /* a full disk and the like: Python's journal decides */
        }
        Py_ssize_t have = 0;
        while (have < k) {
            ssize_t r = pread(journal_fd, s->buf + got + have, (size_t)(k - have),
                              (off_t)(journal_off + got + have));
            if (r <= 0) {
                if (r < 0 && errno == EINTR)
                    continue;
                break;
            }
            have += r;
        }
        got += have;
        if (have < k) { /* an EIO reading it back: Python reads the rest (or raises) */
            f->unread = k - have;
            break;
        }
    }
    f->got = got;
    f->pipe_left = moved - got - f->unread;
    return 1;
}

static void write_plain(Step *s, Found *f) {
    f->wrote = 1;
    for (int i = 0; i < s->nlive; i++) {
        Py_ssize_t done = 0;
        while (done < f->got) {
            ssize_t w = write(s->live[i], s->buf + done, (size_t)(f->got - done));
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                if (errno != EAGAIN)
                    done = -1;
                break;
            }
            if (w == 0)
                break;
            done += w;
        }
        f->written[i] = done;
    }
}

static KeyTty *key_tty(Step *s, int fd) {
    for (int i = 0; i < s->nkeys; i++)
        if (s->keys[i].fd == fd)
            return &s->keys[i];
    return NULL;
}

static void run_step(Step *s, Found *f, int timeout_ms, int journal_fd, long long journal_off,
                     int plain, int input_empty) {
    struct pollfd fds[MAX_FDS];
    for (int i = 0; i < s->nwatch; i++) {
        fds[i].fd = s->watch[i].fd;
        fds[i].events = (short)s->watch[i].events;
    }
    long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    for (;;) {
        int wait = -1;
        if (deadline >= 0) {
            long long left = deadline - now_ms();
            wait = left < 0 ? 0 : (int)left;
        }
        int n = poll(fds, (nfds_t)s->nwatch, wait);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            f->error = errno;
            return;
        }
        if (n == 0)
            return;
        int for_python = 0;
        for (int i = 0; i < s->nwatch; i++) {
            short ev = fds[i].revents;
            if (!ev)
                continue;
            int fd = fds[i].fd;
            if (fd == s->master) {
                short in = ev & (POLLIN | POLLHUP | POLLERR);
                if (in && journal_fd >= 0 && f->got == 0 && !f->ended &&
                    take_output(s, f, journal_fd, journal_off)) {
                    int whole = !f->pipe_left && !f->unread;
                    if (plain && whole && f->got > 0 && !memchr(s->buf, 0x1b, (size_t)f->got))
                        write_plain(s, f);
                    ev &= (short)~in;
                }
                if (f->got || f->ended || f->pipe_left || f->unread)
                    for_python = 1;
                if (ev) {
                    back(f, fd, ev);
                    for_python = 1;
                }
                continue;
            }
            KeyTty *k = input_empty ? key_tty(s, fd) : NULL;
            if (k != NULL && (ev & POLLIN)) {
                int taken = take_keys(s, f, k);
                if (taken != 1)
                    for_python = 1;
                if (taken < 0)
                    input_empty = 0; /* keys wait for the master: the others after them */
                ev &= (short)~(POLLIN | POLLHUP | POLLERR);
            }
            if (ev) {
                back(f, fd, ev);
                for_python = 1;
            }
        }
        if (for_python || (deadline >= 0 && now_ms() >= deadline))
            return;
        /* keys only: poll on a little for their echo (and the wake pipe) */
        long long soon = now_ms() + KEY_WAIT_MS;
        if (deadline < 0 || soon < deadline)
            deadline = soon;
    }
}

static PyObject *build(Step *s, Found *f) {
    PyObject *events = PyList_New(f->nback);
    PyObject *typed = PyList_New(f->ntyped);
    PyObject *keys = PyList_New(f->nraw);
    PyObject *batch = NULL, *written = NULL;
    if (events == NULL || typed == NULL || keys == NULL)
        goto fail;
    for (int i = 0; i < f->nback; i++) {
        PyObject *t = Py_BuildValue("(ii)", f->back[i].fd, (int)f->back[i].revents);
        if (t == NULL)
            goto fail;
        PyList_SET_ITEM(events, i, t);
    }
    for (int i = 0; i < f->ntyped; i++) {
        PyObject *v = PyLong_FromLong(f->typed[i]);
        if (v == NULL)
            goto fail;
        PyList_SET_ITEM(typed, i, v);
    }
    for (int i = 0; i < f->nraw; i++) {
        PyObject *t = Py_BuildValue("(iy#O)", f->raw_fd[i], f->raw[i] ? f->raw[i] : "",
                                    f->raw_len[i], f->raw_left[i] ? Py_True : Py_False);
        if (t == NULL)
            goto fail;
        PyList_SET_ITEM(keys, i, t);
    }
    batch = PyBytes_FromStringAndSize(s->buf, f->got);
    if (batch == NULL)
        goto fail;
    if (f->wrote) {
        written = PyTuple_New(s->nlive);
        if (written == NULL)
            goto fail;
        for (int i = 0; i < s->nlive; i++) {
            PyObject *v = PyLong_FromLongLong(f->written[i]);
            if (v == NULL)
                goto fail;
            PyTuple_SET_ITEM(written, i, v);
        }
    } else {
        written = Py_NewRef(Py_None);
    }
    return Py_BuildValue("(NNNNOnNn)", events, batch, written, typed,
                         f->ended ? Py_True : Py_False, f->pipe_left, keys, f->unread);
fail:
    Py_XDECREF(events);
    Py_XDECREF(typed);
    Py_XDECREF(keys);
    Py_XDECREF(batch);
    Py_XDECREF(written);
    return NULL;
}

/* step(timeout_ms, journal_fd, journal_off, plain, input_empty)
 *   -> (events, batch, written, typed, ended, pipe_left, keys, unread) */
static PyObject *Step_step(Step *s, PyObject *args) {
    int timeout_ms, journal_fd, plain, input_empty;
    long long journal_off;
    if (!PyArg_ParseTuple(args, "iiLpp", &timeout_ms, &journal_fd, &journal_off, &plain,
                          &input_empty))
        return NULL;
    Found *f = &s->found;
    f->nback = f->ntyped = f->nraw = 0;
    f->got = f->pipe_left = f->unread = 0;
    f->wrote = f->ended = f->error = 0;
    Py_BEGIN_ALLOW_THREADS
    run_step(s, f, timeout_ms, journal_fd, journal_off, plain, input_empty);
    Py_END_ALLOW_THREADS
    PyObject *result;
    if (f->error) {
        errno = f->error;
        result = PyErr_SetFromErrno(PyExc_OSError);
    } else {
        result = build(s, f);
    }
    for (int i = 0; i < f->nraw; i++)
        free(f->raw[i]);
    f->nraw = 0;
    return result;
}

/* watch(polled: [(fd, events)], live: [fd], keys: [(fd, detach_key)]) */
static PyObject *Step_watch(Step *s, PyObject *args) {
    PyObject *polled, *live, *keys;
    if (!PyArg_ParseTuple(args, "OOO", &polled, &live, &keys))
        return NULL;
    PyObject *p = PySequence_Fast(polled, "polled: a sequence");
    PyObject *l = p ? PySequence_Fast(live, "live: a sequence") : NULL;
    PyObject *k = l ? PySequence_Fast(keys, "keys: a sequence") : NULL;
    if (k == NULL)
        goto fail;
    if (PySequence_Fast_GET_SIZE(p) > MAX_FDS || PySequence_Fast_GET_SIZE(l) > MAX_FDS ||
        PySequence_Fast_GET_SIZE(k) > MAX_FDS) {
        PyErr_SetString(PyExc_ValueError, "more descriptors than the step holds");
        goto fail;
    }
    Watch watch[MAX_FDS];
    int live_fds[MAX_FDS];
    KeyTty key_ttys[MAX_FDS];
    Py_ssize_t np = PySequence_Fast_GET_SIZE(p), nl = PySequence_Fast_GET_SIZE(l),
               nk = PySequence_Fast_GET_SIZE(k);
    for (Py_ssize_t i = 0; i < np; i++)
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(p, i), "ii", &watch[i].fd,
                              &watch[i].events))
            goto fail;
    for (Py_ssize_t i = 0; i < nl; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(l, i));
        live_fds[i] = (int)v;
        if (v == -1 && PyErr_Occurred())
            goto fail;
    }
    for (Py_ssize_t i = 0; i < nk; i++) {
        const char *detach;
        Py_ssize_t len;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(k, i), "iy#", &key_ttys[i].fd, &detach,
                              &len))
            goto fail;
        if (len > MAX_DETACH) {
            PyErr_SetString(PyExc_ValueError, "detach key too long");
            goto fail;
        }
        memcpy(key_ttys[i].detach, detach, (size_t)len);
        key_ttys[i].detach_len = (int)len;
    }
    memcpy(s->watch, watch, sizeof(Watch) * (size_t)np);
    memcpy(s->live, live_fds, sizeof(int) * (size_t)nl);
    memcpy(s->keys, key_ttys, sizeof(KeyTty) * (size_t)nk);
    s->nwatch = (int)np;
    s->nlive = (int)nl;
    s->nkeys = (int)nk;
    Py_DECREF(p);
    Py_DECREF(l);
    Py_DECREF(k);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(p);
    Py_XDECREF(l);
    Py_XDECREF(k);
    return NULL;
}

static int Step_init(Step *s, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"master", "pipe_r", "pipe_w", "read_size", "small_read", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iiinn", names, &s->master, &s->pipe_r,
                                     &s->pipe_w, &s->read_size, &s->small_read))
        return -1;
    if (s->read_size <= 0 || s->small_read <= 0) {
        PyErr_SetString(PyExc_ValueError, "read_size and small_read must be positive");
        return -1;
    }
    free(s->buf);
    s->buf = malloc((size_t)s->read_size);
    if (s->buf == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    s->nwatch = s->nlive = s->nkeys = 0;
    return 0;
}

static void Step_dealloc(Step *s) {
    free(s->buf);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyMethodDef Step_methods[] = {
    {"step", (PyCFunction)Step_step, METH_VARARGS,
     "step(timeout_ms, journal_fd, journal_off, plain, input_empty) -> "
     "(events, batch, written, typed, ended, pipe_left, keys, unread)"},
    {"watch", (PyCFunction)Step_watch, METH_VARARGS,
     "watch(polled, live, keys): what the next steps poll, write plain text to, read keys of"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject StepType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "actors.ptyd._relaystep.Step",
    .tp_basicsize = sizeof(Step),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One session's relay step (see the module's source for what it does).",
    .tp_methods = Step_methods,
    .tp_init = (initproc)Step_init,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)Step_dealloc,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "actors.ptyd._relaystep",
    .m_doc = "The relay thread's hot step in C, without the GIL (relay.py).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__relaystep(void) {
    if (PyType_Ready(&StepType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Step", (PyObject *)&StepType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
