"""edrpack: read edr-lite dumps (pack or MCAP) from Python through libedrpack.

Standard library only (ctypes); the compiled part is libedrpack.so, built with
``go build -buildmode=c-shared -o libedrpack.so ./sdk/libedrpack`` (or
sdk/build.sh). The library is looked for in $EDRPACK_LIB, next to this file,
then on the system's library path.

    import edrpack
    with edrpack.Dump("dump.pack") as d:
        for t in d.topics():
            print(t.topic, t.messages, t.type)
        d.seek_time(t0_ns)
        for topic, time_ns, data in d.messages():
            ...

A Dump is not safe to share between threads without a lock (the library
refuses concurrent calls on one handle with EdrError code EDR_EBUSY); open
one Dump per thread instead. Payloads are copied into bytes objects, so they
stay valid after the next message.
"""

import ctypes
import ctypes.util
import os
from collections import namedtuple

__all__ = ["Dump", "EdrError", "Topic", "load"]

EDR_OK, EDR_EOF = 0, 1
CODES = {
    -1: "EDR_EINVAL",
    -2: "EDR_EBADHANDLE",
    -3: "EDR_EIO",
    -4: "EDR_ECORRUPT",
    -5: "EDR_EFORMAT",
    -6: "EDR_ENOTSUP",
    -7: "EDR_EBUSY",
}


class _Message(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.POINTER(ctypes.c_char)),
        ("name_len", ctypes.c_size_t),
        ("channel", ctypes.POINTER(ctypes.c_char)),
        ("channel_len", ctypes.c_size_t),
        ("meta", ctypes.c_void_p),
        ("meta_len", ctypes.c_size_t),
        ("data", ctypes.c_void_p),
        ("data_len", ctypes.c_size_t),
        ("gen_ts", ctypes.c_int64),
        ("done_ts", ctypes.c_int64),
        ("time_ns", ctypes.c_int64),
        ("data_index", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
    ]


class _FrameView(ctypes.Structure):
    _fields_ = [
        ("frame", ctypes.c_uint64),
        ("id", ctypes.c_uint64),
        ("time_ns", ctypes.c_int64),
        ("done_ns", ctypes.c_int64),
        ("type", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
        ("offset", ctypes.c_int64),
        ("n_messages", ctypes.c_size_t),
        ("messages", ctypes.POINTER(_Message)),
    ]


class _Topic(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("channel", ctypes.c_char_p),
        ("type", ctypes.c_char_p),
        ("messages", ctypes.c_uint64),
    ]


class _Summary(ctypes.Structure):
    _fields_ = [
        ("format", ctypes.c_int32),
        ("indexed", ctypes.c_int32),
        ("frames", ctypes.c_uint64),
        ("messages", ctypes.c_uint64),
        ("first_ns", ctypes.c_int64),
        ("last_ns", ctypes.c_int64),
        ("created_ns", ctypes.c_int64),
        ("writer", ctypes.c_char_p),
    ]


Topic = namedtuple("Topic", "topic name channel type messages")
Topic.__doc__ = "A topic of a dump; topic is 'name', or 'name#channel' when there is a channel."


class EdrError(Exception):
    """A libedrpack failure: code (EDR_E*), its name, the message and the byte offset of the damage (-1 if none)."""

    def __init__(self, code, message, offset=-1):
        self.code, self.name, self.offset = code, CODES.get(code, str(code)), offset
        super().__init__("%s (%s)" % (message, self.name))


_lib = None


def load(path=None):
    """Loads libedrpack (once): path, $EDRPACK_LIB, beside this file, or the library path."""
    global _lib
    if _lib is not None and path is None:
        return _lib
    candidates = [path, os.environ.get("EDRPACK_LIB"),
                  os.path.join(os.path.dirname(os.path.abspath(__file__)), "libedrpack.so"),
                  ctypes.util.find_library("edrpack")]
    for c in candidates:
        if c and (os.path.exists(c) or not os.path.dirname(c)):
            lib = ctypes.CDLL(c)
            break
    else:
        raise OSError("libedrpack not found: set EDRPACK_LIB or build it with sdk/build.sh")
    u64, i64, sz = ctypes.c_uint64, ctypes.c_int64, ctypes.c_size_t
    sigs = {
        "edr_version": ([], ctypes.c_char_p),
        "edr_last_error": ([u64], ctypes.c_char_p),
        "edr_error_offset": ([u64], i64),
        "edr_free": ([ctypes.c_void_p], ctypes.c_int),
        "edr_pack_open_read": ([ctypes.c_char_p, ctypes.POINTER(u64)], ctypes.c_int),
        "edr_pack_read_frame": ([u64, ctypes.c_int, ctypes.POINTER(_FrameView)], ctypes.c_int),
        "edr_pack_seek_time": ([u64, i64], ctypes.c_int),
        "edr_pack_summary": ([u64, ctypes.POINTER(_Summary)], ctypes.c_int),
        "edr_pack_topics": ([u64, ctypes.POINTER(ctypes.POINTER(_Topic)), ctypes.POINTER(sz)], ctypes.c_int),
        "edr_pack_close": ([u64], ctypes.c_int),
    }
    for name, (args, res) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    if path is None:
        _lib = lib
    return lib


def _topic(name, channel):
    return name + "#" + channel if channel else name


class Dump:
    """A pack or MCAP dump open for reading (edr_pack_open_read)."""

    def __init__(self, path, lib=None):
        self._lib = load(lib)
        self._h = ctypes.c_uint64(0)
        self._check(self._lib.edr_pack_open_read(os.fsencode(path), ctypes.byref(self._h)), 0)
        self.path = path

    def _check(self, rc, h=None):
        if rc < 0:
            h = self._h.value if h is None else h
            msg = self._lib.edr_last_error(h).decode("utf-8", "replace")
            raise EdrError(rc, msg, self._lib.edr_error_offset(h))
        return rc

    def close(self):
        if self._h.value:
            h, self._h = self._h.value, ctypes.c_uint64(0)
            rc = self._lib.edr_pack_close(h)
            if rc < 0:
                raise EdrError(rc, self._lib.edr_last_error(0).decode("utf-8", "replace"), self._lib.edr_error_offset(0))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def summary(self):
        """What the dump holds: format ('pack' or 'mcap'), indexed, frames, messages, first_ns, last_ns, writer."""
        s = _Summary()
        self._check(self._lib.edr_pack_summary(self._h, ctypes.byref(s)))
        return {"format": {1: "pack", 2: "mcap"}.get(s.format, s.format), "indexed": bool(s.indexed),
                "frames": s.frames, "messages": s.messages, "first_ns": s.first_ns, "last_ns": s.last_ns,
                "created_ns": s.created_ns, "writer": (s.writer or b"").decode("utf-8", "replace")}

    def topics(self):
        """The dump's topics, as a list of Topic."""
        arr, n = ctypes.POINTER(_Topic)(), ctypes.c_size_t(0)
        self._check(self._lib.edr_pack_topics(self._h, ctypes.byref(arr), ctypes.byref(n)))
        try:
            out = []
            for i in range(n.value):
                t = arr[i]
                name, channel = t.name.decode(), t.channel.decode()
                out.append(Topic(_topic(name, channel), name, channel, t.type.decode(), t.messages))
            return out
        finally:
            self._lib.edr_free(arr)

    def seek_time(self, time_ns):
        """Moves to the first frame (pack) or message (MCAP) whose time is >= time_ns."""
        self._check(self._lib.edr_pack_seek_time(self._h, int(time_ns)))

    def frames(self, with_data=True):
        """Yields each frame as (id, time_ns, [(topic, time_ns, data or None), ...])."""
        v = _FrameView()
        while True:
            rc = self._check(self._lib.edr_pack_read_frame(self._h, 1 if with_data else 0, ctypes.byref(v)))
            if rc == EDR_EOF:
                return
            msgs = []
            for i in range(v.n_messages):
                m = v.messages[i]
                name = ctypes.string_at(m.name, m.name_len).decode("utf-8", "replace")
                channel = ctypes.string_at(m.channel, m.channel_len).decode("utf-8", "replace")
                data = ctypes.string_at(m.data, m.data_len) if m.data else None
                msgs.append((_topic(name, channel), m.time_ns, data))
            yield v.id, v.time_ns, msgs

    def messages(self, with_data=True):
        """Yields every message from the current position as (topic, time_ns, data): data is bytes
        (b"" for a message without data). time_ns is the capture time edr-lite orders by."""
        for _, _, msgs in self.frames(with_data):
            for topic, t, data in msgs:
                yield topic, t, data if data is not None else b""
