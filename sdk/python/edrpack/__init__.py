"""edrpack: read and write edr-lite dumps (pack or MCAP) from Python through libedrpack.

The compiled part is libedrpack.so (the pack-sdk's C library): a wheel carries it
beside this file; from a source tree, build it with ``go build -buildmode=c-shared
-o libedrpack.so ./sdk/libedrpack`` (or sdk/build.sh) and set $EDRPACK_LIB. The
standard library does the rest (ctypes); numpy is optional (to_numpy, write_numpy).

    import edrpack
    with edrpack.Dump("dump.pack") as d:
        for schema, channel, message in d.iter_messages(topics=["vehicle/*"], start_time=t0, end_time=t1):
            print(channel.topic, message.log_time, schema.name if schema else None, len(message.data))
        speed = d.to_numpy("vehicle/speed")          # a packed layout as a numpy structured array

    with edrpack.Writer("out.pack", compression="zstd") as w:
        w.set_packed_type("vehicle/speed", "vehicle.Speed", "f32le v (m/s); u8 gear; pad 3")
        w.write("vehicle/speed", t, struct.pack("<fB3x", 12.5, 3))

Each iter_messages() has its own cursor (its own handle on the file): two of them
never disturb each other. frames() and messages() share the Dump's cursor (and
seek_time); starting a second one ends the first, which then raises EdrError.
A Dump is used by one thread at a time; open one per thread. docs/sdk.md, "Python".
"""

import ctypes
import ctypes.util
import json
import os
import struct
from collections import namedtuple

__all__ = ["Dump", "Writer", "EdrError", "Topic", "Schema", "Channel", "Message", "load", "API_VERSION"]

__version__ = "2.0.0"

# The C API this module speaks (EDR_PACK_API_VERSION): the library must say the same.
API_VERSION = 2

EDR_OK, EDR_EOF = 0, 1
EDR_EINVAL = -1
CODES = {
    -1: "EDR_EINVAL",
    -2: "EDR_EBADHANDLE",
    -3: "EDR_EIO",
    -4: "EDR_ECORRUPT",
    -5: "EDR_EFORMAT",
    -6: "EDR_ENOTSUP",
    -7: "EDR_EBUSY",
    -8: "EDR_ENOMATCH",
}
_FILTER_START, _FILTER_END = 1, 2
_COMPRESSION = {"none": 0, "lz4": 1, "zstd": 2}


class _Type(ctypes.Structure):
    _fields_ = [
        ("message_encoding", ctypes.c_char_p),
        ("schema_name", ctypes.c_char_p),
        ("schema_encoding", ctypes.c_char_p),
        ("schema_data", ctypes.c_void_p),
        ("schema_len", ctypes.c_size_t),
    ]


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
        ("has_seq", ctypes.c_int32),
        ("seq", ctypes.c_uint64),
        ("type", ctypes.c_void_p),
    ]


# _Message as struct unpacks it: a frame's messages in one call.
_MSG_FMT = "@PNPNPNPNqqqiiQP"
_MSG = struct.Struct(_MSG_FMT)


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
        ("first_type", _Type),
        ("n_types", ctypes.c_size_t),
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


class _ReadOptions(ctypes.Structure):
    _fields_ = [("skip_damaged", ctypes.c_int32), ("reserved", ctypes.c_int32)]


class _Skipped(ctypes.Structure):
    _fields_ = [
        ("regions", ctypes.c_uint64),
        ("frames", ctypes.c_uint64),
        ("bytes", ctypes.c_uint64),
        ("types", ctypes.c_uint64),
        ("first_offset", ctypes.c_int64),
        ("reserved", ctypes.c_int64),
    ]


class _Filter(ctypes.Structure):
    _fields_ = [
        ("topics", ctypes.POINTER(ctypes.c_char_p)),
        ("n_topics", ctypes.c_size_t),
        ("exclude", ctypes.POINTER(ctypes.c_char_p)),
        ("n_exclude", ctypes.c_size_t),
        ("start_ns", ctypes.c_int64),
        ("end_ns", ctypes.c_int64),
        ("flags", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
    ]


class _WriteOptions(ctypes.Structure):
    _fields_ = [
        ("compression", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
        ("writer", ctypes.c_char_p),
        ("created_ns", ctypes.c_int64),
    ]


class _Attachment(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("media_type", ctypes.c_char_p),
        ("log_ns", ctypes.c_int64),
        ("create_ns", ctypes.c_int64),
        ("data", ctypes.c_void_p),
        ("len", ctypes.c_size_t),
    ]


Topic = namedtuple("Topic", "topic name channel type messages message_encoding schema n_types")
Topic.__doc__ = """A topic of a dump. topic is 'name', or 'name#channel' when there is a channel; type is
its type's name; message_encoding and schema (a Schema; None for raw bytes without a type name)
its first type; n_types how many types it has in the file."""

Schema = namedtuple("Schema", "name encoding data")
Schema.__doc__ = """A message schema (as mcap's): the type's name, the schema encoding, the schema bytes
(encoding "" and no bytes: a named type without a schema, as raw bytes named by the recorder)."""

Channel = namedtuple("Channel", "topic name channel message_encoding")
Channel.__doc__ = "Where a message was published (as mcap's Channel): topic ('name' or 'name#channel') and its encoding."

Message = namedtuple("Message", "log_time publish_time sequence data meta")
Message.__doc__ = """A message (as mcap's): log_time is the time edr-lite orders by (ns since the epoch),
publish_time the producer's (0: unknown), sequence the producer's number (None: not recorded),
data the payload (bytes), meta the pack meta bytes (b"" when none)."""

Attachment = namedtuple("Attachment", "name media_type log_time create_time data")


class EdrError(Exception):
    """A libedrpack failure: code (EDR_E*), its name, the message and the byte offset of the damage (-1 if none)."""

    def __init__(self, code, message, offset=-1):
        self.code, self.name, self.offset = code, CODES.get(code, str(code)), offset
        super().__init__("%s (%s)" % (message, self.name))


_lib = None


def load(path=None):
    """Loads libedrpack (once): path, $EDRPACK_LIB, beside this file, or the library path. It must
    speak this module's API_VERSION (structs differ between versions)."""
    global _lib
    if isinstance(path, ctypes.CDLL):  # already loaded
        return path
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
        raise OSError("libedrpack not found: install the edrpack wheel, or set EDRPACK_LIB (sdk/build.sh builds it)")
    u64, i64, sz, vp, cp, ci = ctypes.c_uint64, ctypes.c_int64, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    P = ctypes.POINTER
    sigs = {
        "edr_version": ([], cp),
        "edr_last_error": ([u64], cp),
        "edr_error_offset": ([u64], i64),
        "edr_free": ([vp], ci),
        "edr_pack_open_read_with": ([cp, P(_ReadOptions), P(u64)], ci),
        "edr_pack_skipped": ([u64, P(_Skipped)], ci),
        "edr_pack_read_frame": ([u64, ci, P(_FrameView)], ci),
        "edr_pack_seek_time": ([u64, i64], ci),
        "edr_pack_summary": ([u64, P(_Summary)], ci),
        "edr_pack_topics": ([u64, P(P(_Topic)), P(sz)], ci),
        "edr_pack_set_filter": ([u64, P(_Filter)], ci),
        "edr_pack_read_records": ([u64, vp, sz, sz, vp, P(sz)], ci),
        "edr_pack_attachments": ([u64, P(P(_Attachment)), P(sz)], ci),
        "edr_pack_close": ([u64], ci),
        "edr_pack_open_write": ([cp, P(_WriteOptions), P(u64)], ci),
        "edr_pack_set_topic_type": ([u64, cp, cp, P(_Type), i64], ci),
        "edr_pack_write_message": ([u64, P(_Message)], ci),
        "edr_pack_add_attachment": ([u64, P(_Attachment)], ci),
        "edr_pack_add_metadata": ([u64, cp, vp, sz], ci),
        "edr_pack_flush": ([u64], ci),
        "edr_layout_json": ([P(_Type), P(vp)], ci),
    }
    for name, (args, res) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    version = lib.edr_version().decode()
    if not version.startswith("libedrpack %d " % API_VERSION):
        raise OSError("%s is %r; this module speaks libedrpack API %d: use the library of the same build" % (c, version, API_VERSION))
    if path is None:
        _lib = lib
    return lib


def _topic(name, channel):
    return name + "#" + channel if channel else name


def _split(topic):
    """'name#channel' -> (name, channel), at the last '#' (as edr-lite splits topics)."""
    i = topic.rfind("#")
    return (topic, "") if i < 0 else (topic[:i], topic[i + 1:])


def _escape(topic):
    """A topic as a glob that matches it only."""
    out = []
    for ch in topic:
        out.append("\\" + ch if ch in "*?[\\" else ch)
    return "".join(out)


def _schema(t):
    """A Schema from a C type: None when the type has neither a schema nor a name (raw bytes)."""
    if not t.schema_encoding and not t.schema_name:
        return None
    data = ctypes.string_at(t.schema_data, t.schema_len) if t.schema_data else b""
    return Schema(t.schema_name.decode("utf-8", "replace"), t.schema_encoding.decode(), data)


def _check(lib, rc, h):
    if rc < 0:
        raise EdrError(rc, lib.edr_last_error(h).decode("utf-8", "replace"), lib.edr_error_offset(h))
    return rc


class _Handle:
    """One open reader handle (a cursor) on a file."""

    def __init__(self, lib, path, skip_damaged):
        self.lib = lib
        self.h = ctypes.c_uint64(0)
        opts = _ReadOptions(1 if skip_damaged else 0, 0)
        _check(lib, lib.edr_pack_open_read_with(os.fsencode(path), ctypes.byref(opts), ctypes.byref(self.h)), 0)

    def check(self, rc):
        return _check(self.lib, rc, self.h.value)

    def close(self):
        if self.h.value:
            h, self.h = self.h.value, ctypes.c_uint64(0)
            _check(self.lib, self.lib.edr_pack_close(h), 0)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def set_filter(self, topics=None, start_time=None, end_time=None, exclude=None):
        if topics is None and start_time is None and end_time is None and not exclude:
            self.check(self.lib.edr_pack_set_filter(self.h, None))
            return
        if isinstance(topics, str):
            topics = [topics]
        if isinstance(exclude, str):
            exclude = [exclude]
        inc = [os.fsencode(t) for t in (topics or [])]
        exc = [os.fsencode(t) for t in (exclude or [])]
        f = _Filter()
        f.topics, f.n_topics = (ctypes.c_char_p * max(len(inc), 1))(*inc), len(inc)
        f.exclude, f.n_exclude = (ctypes.c_char_p * max(len(exc), 1))(*exc), len(exc)
        if start_time is not None:
            f.start_ns, f.flags = int(start_time), f.flags | _FILTER_START
        if end_time is not None:
            f.end_ns, f.flags = int(end_time), f.flags | _FILTER_END
        self.check(self.lib.edr_pack_set_filter(self.h, ctypes.byref(f)))

    def skipped(self):
        s = _Skipped()
        self.check(self.lib.edr_pack_skipped(self.h, ctypes.byref(s)))
        return {"regions": s.regions, "frames": s.frames, "bytes": s.bytes, "types": s.types,
                "first_offset": s.first_offset}


class MessageIterator:
    """The messages a filter selects, as (schema, channel, message) tuples: iter_messages()'s
    result. It reads through a handle of its own (its own cursor), closed at the end, by
    close(), or when it is collected; skipped() says what it passed over (skip_damaged)."""

    def __init__(self, lib, path, skip_damaged, topics, start_time, end_time, exclude, with_data):
        self._hd = _Handle(lib, path, skip_damaged)
        try:
            self._hd.set_filter(topics, start_time, end_time, exclude)
        except BaseException:
            self._hd.close()
            raise
        self._with_data = 1 if with_data else 0
        self._v = _FrameView()
        self._pending = iter(())
        # (name, channel, type pointers) -> (Schema or None, Channel): the library's names and
        # types live until its handle closes, one pointer each
        self._channels = {}
        self._schemas = {}
        self._fast = ctypes.sizeof(_Message) == _MSG.size

    def __iter__(self):
        return self

    def __next__(self):
        for item in self._pending:
            return item
        self._pending = iter(self._read())
        for item in self._pending:
            return item
        raise StopIteration

    def _read(self):
        """The next frame's messages, as a list; [] at the end (the handle is closed then)."""
        hd, v = self._hd, self._v
        while True:
            if not hd.h.value:
                return []
            rc = hd.check(hd.lib.edr_pack_read_frame(hd.h, self._with_data, ctypes.byref(v)))
            if rc == EDR_EOF:
                return []
            n = v.n_messages
            if n:
                break
        out = []
        string_at = ctypes.string_at
        if self._fast:
            raw = string_at(v.messages, n * _MSG.size)
            rows = _MSG.iter_unpack(raw)
        else:  # a platform where the struct's layout is not the format's: field by field
            rows = ((m.name and ctypes.addressof(m.name.contents), m.name_len,
                     m.channel and ctypes.addressof(m.channel.contents), m.channel_len, m.meta, m.meta_len,
                     m.data, m.data_len, m.gen_ts, m.done_ts, m.time_ns, m.data_index, m.has_seq, m.seq, m.type)
                    for m in (v.messages[i] for i in range(n)))
        for (np_, nl, cp_, cl, mp, ml, dp, dl, gen, _done, t, _di, has_seq, seq, tp) in rows:
            key = (np_, cp_, tp)
            sc = self._channels.get(key)
            if sc is None:
                # a topic's type can change inside a file: the channel carries the message's encoding
                ct = ctypes.cast(tp, ctypes.POINTER(_Type)).contents
                name = string_at(np_, nl).decode("utf-8", "replace")
                channel = string_at(cp_, cl).decode("utf-8", "replace") if cl else ""
                sc = self._channels[key] = (self._schemas.setdefault(tp, _schema(ct)),
                                            Channel(_topic(name, channel), name, channel, ct.message_encoding.decode()))
            out.append((sc[0], sc[1], Message(t, gen, seq if has_seq else None,
                                              string_at(dp, dl) if dp else b"", string_at(mp, ml) if mp else b"")))
        return out

    def skipped(self):
        """What the reads so far passed over (skip_damaged): see Dump.skipped()."""
        return self._hd.skipped()

    def close(self):
        self._hd.close()


class Dump:
    """A pack or MCAP dump open for reading (edr_pack_open_read_with).

    skip_damaged=True reads past damage (pack files): a damaged frame or type section is skipped
    and the reads go on; skipped() says what was passed over. Without it a damaged frame raises
    EdrError (EDR_ECORRUPT, with its offset) and every later read raises it again."""

    def __init__(self, path, lib=None, skip_damaged=False):
        self._lib = load(lib)
        self.path, self._skip = path, skip_damaged
        self._hd = _Handle(self._lib, path, skip_damaged)
        self._gen = 0  # counts frames()/messages() iterators: an older one is ended

    @property
    def _h(self):
        return self._hd.h

    def _check(self, rc):
        return self._hd.check(rc)

    def close(self):
        self._hd.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def summary(self):
        """What the dump holds: format ('pack' or 'mcap'), indexed, frames, messages, first_ns, last_ns, writer."""
        s = _Summary()
        self._check(self._lib.edr_pack_summary(self._h, ctypes.byref(s)))
        return {"format": {1: "pack", 2: "mcap"}.get(s.format, s.format), "indexed": bool(s.indexed),
                "frames": s.frames, "messages": s.messages, "first_ns": s.first_ns, "last_ns": s.last_ns,
                "created_ns": s.created_ns, "writer": (s.writer or b"").decode("utf-8", "replace")}

    def skipped(self):
        """What the reads of frames() and messages() so far skipped (skip_damaged): regions,
        frames, bytes, types (type sections left out) and first_offset (-1 when none)."""
        return self._hd.skipped()

    def topics(self):
        """The dump's topics, as a list of Topic."""
        arr, n = ctypes.POINTER(_Topic)(), ctypes.c_size_t(0)
        self._check(self._lib.edr_pack_topics(self._h, ctypes.byref(arr), ctypes.byref(n)))
        try:
            out = []
            for i in range(n.value):
                t = arr[i]
                name, channel = t.name.decode(), t.channel.decode()
                out.append(Topic(_topic(name, channel), name, channel, t.type.decode("utf-8", "replace"), t.messages,
                                 t.first_type.message_encoding.decode(), _schema(t.first_type), t.n_types))
            return out
        finally:
            self._lib.edr_free(arr)

    def attachments(self):
        """The files stored with the dump, as a list of Attachment (name, media_type, log_time,
        create_time, data)."""
        arr, n = ctypes.POINTER(_Attachment)(), ctypes.c_size_t(0)
        self._check(self._lib.edr_pack_attachments(self._h, ctypes.byref(arr), ctypes.byref(n)))
        try:
            return [Attachment(a.name.decode("utf-8", "replace"), a.media_type.decode("utf-8", "replace"), a.log_ns,
                               a.create_ns, ctypes.string_at(a.data, a.len)) for a in (arr[i] for i in range(n.value))]
        finally:
            self._lib.edr_free(arr)

    def iter_messages(self, topics=None, start_time=None, end_time=None, exclude=None, with_data=True):
        """Yields (schema, channel, message) for each message the filter selects, in file order
        (MCAP: log-time order), as mcap's reader does: schema is a Schema (None when the type has
        no schema), channel a Channel, message a Message.

        topics and exclude are globs as `edr-lite cat --topics/--exclude` takes them (tried
        against "name#channel" and against the name alone; a string or a list); start_time and
        end_time (ns) bound the message times, both inclusive as cat's --from/--to (mcap's
        end_time is exclusive). Topics that match none of the file's raise EdrError
        (EDR_ENOMATCH) listing what it holds. Each call reads through its own cursor."""
        return MessageIterator(self._lib, self.path, self._skip, topics, start_time, end_time, exclude, with_data)

    def seek_time(self, time_ns):
        """Moves so that frames() and messages() then yield exactly the messages whose time_ns is
        >= time_ns (a pack frame running at time_ns is read without its earlier messages)."""
        self._check(self._lib.edr_pack_seek_time(self._h, int(time_ns)))

    def frames(self, with_data=True):
        """Yields each frame as (id, time_ns, [(topic, time_ns, data or None), ...]) from the Dump's
        cursor. Starting another frames() or messages() ends this one (it raises EdrError)."""
        self._gen += 1
        return self._frames(with_data, self._gen)

    def _moved(self, mine):
        if self._gen != mine:
            raise EdrError(EDR_EINVAL, "%s: another frames() or messages() moved this Dump's cursor "
                           "(iter_messages() gives iterators with cursors of their own)" % self.path)

    def _frames(self, with_data, mine):
        v = _FrameView()
        while True:
            self._moved(mine)
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
        (b"" for a message without data). time_ns is the capture time edr-lite orders by. Starting
        another frames() or messages() ends this one (it raises EdrError)."""
        self._gen += 1
        return self._messages(with_data, self._gen)

    def _messages(self, with_data, mine):
        for _, _, msgs in self._frames(with_data, mine):
            for topic, t, data in msgs:
                self._moved(mine)
                yield topic, t, data if data is not None else b""

    def _topic_info(self, topic):
        for t in self.topics():
            if t.topic == topic:
                return t
        raise EdrError(-8, "%s: no topic %r; it holds %s" % (self.path, topic, ", ".join(sorted(t.topic for t in self.topics()))))

    def dtype(self, topic):
        """The numpy dtype of a packed topic's records (its layout: offsets, byte orders, arrays,
        nested structs; pad leaves gaps). Needs numpy."""
        np = _numpy()
        t = self._topic_info(topic)
        if t.message_encoding != "x-edr-packed" or t.schema is None:
            raise EdrError(EDR_EINVAL, "%s: topic %s is %s, not a packed layout (x-edr-packed): "
                           "iter_messages() gives its payloads" % (self.path, topic, t.message_encoding))
        return _dtype(np, layout_json(t.schema.name, t.schema.data, self._lib))

    def to_numpy(self, topic, start_time=None, end_time=None, times=False):
        """The records of a packed topic (exactly as topics() spells it) as a numpy structured
        array (dtype()), within [start_time, end_time] (inclusive). The library copies each
        message's record once, from the file straight into the array's memory: no Python
        object per message. times=True returns (times, records), times an int64 array of
        log_time. A topic whose type changes inside the file is refused (its records differ);
        so is a message shorter than the layout, naming it."""
        np = _numpy()
        t = self._topic_info(topic)
        if t.n_types > 1:
            raise EdrError(EDR_EINVAL, "%s: topic %s has %d types in the file: its records differ "
                           "(iter_messages() gives each message's schema)" % (self.path, topic, t.n_types))
        dt = self.dtype(topic)
        name, channel = _split(topic)
        hd = _Handle(self._lib, self.path, self._skip)
        try:
            hd.set_filter([_escape(topic)], start_time, end_time, [_escape(name) + "#*"] if not channel else None)
            recs = np.empty(t.messages, dtype=dt)
            ts = np.empty(t.messages, dtype=np.int64)
            n = ctypes.c_size_t(0)
            rc = hd.check(self._lib.edr_pack_read_records(hd.h, recs.ctypes.data, dt.itemsize, t.messages,
                                                          ts.ctypes.data, ctypes.byref(n)))
            if rc != EDR_EOF:  # the count the index gave is exhausted: one more read must be the end
                extra = np.empty(1, dtype=dt)
                m = ctypes.c_size_t(0)
                hd.check(self._lib.edr_pack_read_records(hd.h, extra.ctypes.data, dt.itemsize, 1, None, ctypes.byref(m)))
                if m.value:
                    raise EdrError(EDR_EINVAL, "%s: topic %s holds more messages than its count (%d)" % (self.path, topic, t.messages))
        finally:
            hd.close()
        recs, ts = recs[:n.value], ts[:n.value]
        return (ts, recs) if times else recs


def _numpy():
    try:
        import numpy
    except ImportError:
        raise ImportError("edrpack: to_numpy and write_numpy need numpy "
                          "(pip install numpy, or apt-get install python3-numpy)") from None
    return numpy


def layout_json(name, layout, lib=None):
    """The record a packed layout describes (edr_layout_json): a dict with name, size and fields
    (offset, numpy format, shape, unit; structs nested)."""
    lib = load(lib)
    data = layout.encode() if isinstance(layout, str) else bytes(layout)
    buf = ctypes.create_string_buffer(data, len(data))
    t = _Type(b"x-edr-packed", name.encode(), b"x-edr-layout", ctypes.cast(buf, ctypes.c_void_p), len(data))
    out = ctypes.c_void_p()
    _check(lib, lib.edr_layout_json(ctypes.byref(t), ctypes.byref(out)), 0)
    try:
        return json.loads(ctypes.string_at(out).decode())
    finally:
        lib.edr_free(out)


def _dtype(np, rec):
    """A numpy dtype from edr_layout_json's description (a record or a struct field)."""
    names, formats, offsets = [], [], []
    for f in rec["fields"]:
        if "fields" in f:
            fmt = _dtype(np, f)
        else:
            fmt = np.dtype(f["format"])
        if f["shape"]:
            fmt = np.dtype((fmt, tuple(f["shape"])))
        names.append(f["name"])
        formats.append(fmt)
        offsets.append(f["offset"])
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": rec["size"]})


class Writer:
    """A pack file being written (edr_pack_open_write): durable once closed.

    compression: "none", "lz4" or "zstd". Topics are 'name' or 'name#channel'. Give a topic its
    type before its first message (set_type, set_packed_type, set_json_type); then `edr-lite info`
    shows it and `edr-lite cat --decode` decodes the messages."""

    def __init__(self, path, compression="none", writer="edrpack (Python)", created_ns=0, lib=None):
        self._lib = load(lib)
        if compression not in _COMPRESSION:
            raise ValueError("compression %r: want one of %s" % (compression, ", ".join(_COMPRESSION)))
        self.path = path
        self._h = ctypes.c_uint64(0)
        self._sizes = {}  # packed topics: the record size
        opts = _WriteOptions(_COMPRESSION[compression], 0, writer.encode(), int(created_ns))
        _check(self._lib, self._lib.edr_pack_open_write(os.fsencode(path), ctypes.byref(opts), ctypes.byref(self._h)), 0)

    def _check(self, rc):
        return _check(self._lib, rc, self._h.value)

    def close(self):
        """Writes the index and the trailer and syncs; a failure raises EdrError."""
        if self._h.value:
            h, self._h = self._h.value, ctypes.c_uint64(0)
            _check(self._lib, self._lib.edr_pack_close(h), 0)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is None:
            self.close()
        else:
            try:
                self.close()
            except EdrError:
                pass

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def set_type(self, topic, message_encoding="x-edr-raw", schema_name="", schema_encoding="", schema=b"", from_ns=0):
        """Gives topic its type from its next message on. The schema must compile (a layout with a
        typo raises EdrError naming its line and column)."""
        data = schema.encode() if isinstance(schema, str) else bytes(schema)
        buf = ctypes.create_string_buffer(data, len(data))
        t = _Type(message_encoding.encode(), schema_name.encode(), schema_encoding.encode(),
                  ctypes.cast(buf, ctypes.c_void_p) if data else None, len(data))
        name, channel = _split(topic)
        self._check(self._lib.edr_pack_set_topic_type(self._h, name.encode(), channel.encode(), ctypes.byref(t), int(from_ns)))
        self._sizes.pop(topic, None)

    def set_packed_type(self, topic, type_name, layout, from_ns=0):
        """A packed struct (x-edr-packed) described by a layout (docs/schemas.md); returns its record
        size in bytes. With numpy, dtype_of(type_name, layout) gives the matching dtype."""
        size = layout_json(type_name, layout, self._lib)["size"]
        self.set_type(topic, "x-edr-packed", type_name, "x-edr-layout", layout, from_ns)
        self._sizes[topic] = size
        return size

    def set_json_type(self, topic, type_name, json_schema=None, from_ns=0):
        """JSON messages, with a JSON Schema (a dict or its text) when given."""
        if json_schema is None:
            self.set_type(topic, "json", type_name, "", b"", from_ns)
        else:
            text = json_schema if isinstance(json_schema, (str, bytes)) else json.dumps(json_schema)
            self.set_type(topic, "json", type_name, "jsonschema", text, from_ns)

    def write(self, topic, log_time, data, publish_time=0, sequence=None, meta=b""):
        """Appends one message: data is bytes (or str, written as UTF-8; a dict or list, as JSON).
        A packed topic's message must hold its record (set_packed_type's size) at least."""
        if isinstance(data, str):
            data = data.encode()
        elif isinstance(data, (dict, list)):
            data = json.dumps(data, separators=(",", ":")).encode()
        else:
            data = bytes(data)
        size = self._sizes.get(topic)
        if size is not None and len(data) < size:
            raise EdrError(EDR_EINVAL, "%s: a message of %d bytes on %s, whose records are %d bytes" % (self.path, len(data), topic, size))
        name, channel = _split(topic)
        m = _Message()
        nb, cb = name.encode(), channel.encode()
        m.name = ctypes.cast(ctypes.c_char_p(nb), ctypes.POINTER(ctypes.c_char))
        m.channel = ctypes.cast(ctypes.c_char_p(cb), ctypes.POINTER(ctypes.c_char))
        dbuf = ctypes.create_string_buffer(data, len(data)) if data else None
        mbuf = ctypes.create_string_buffer(bytes(meta), len(meta)) if meta else None
        m.data, m.data_len = (ctypes.cast(dbuf, ctypes.c_void_p) if dbuf else None), len(data)
        m.meta, m.meta_len = (ctypes.cast(mbuf, ctypes.c_void_p) if mbuf else None), len(meta)
        m.done_ts, m.gen_ts = int(log_time), int(publish_time)
        if sequence is not None:
            m.has_seq, m.seq = 1, int(sequence)
        self._check(self._lib.edr_pack_write_message(self._h, ctypes.byref(m)))

    def write_numpy(self, topic, times, records, publish_times=None):
        """Writes each record of a numpy structured array (its dtype the topic's layout:
        set_packed_type) as a message at times[i]."""
        np = _numpy()
        size = self._sizes.get(topic)
        if size is None:
            raise EdrError(EDR_EINVAL, "%s: topic %s has no packed type: set_packed_type first" % (self.path, topic))
        recs = np.ascontiguousarray(records)
        if recs.dtype.itemsize != size:
            raise EdrError(EDR_EINVAL, "%s: records of %d bytes for %s, whose layout is %d bytes" % (self.path, recs.dtype.itemsize, topic, size))
        if len(times) != len(recs):
            raise ValueError("%d times for %d records" % (len(times), len(recs)))
        raw = recs.tobytes()
        for i, t in enumerate(times):
            self.write(topic, int(t), raw[i * size:(i + 1) * size], 0 if publish_times is None else int(publish_times[i]))

    def add_attachment(self, name, data, media_type="", log_time=0, create_time=0):
        """Stores a file with the dump (a calibration, a map), written at once."""
        data = data.encode() if isinstance(data, str) else bytes(data)
        buf = ctypes.create_string_buffer(data, len(data))
        a = _Attachment(name.encode(), media_type.encode(), int(log_time), int(create_time), ctypes.cast(buf, ctypes.c_void_p), len(data))
        self._check(self._lib.edr_pack_add_attachment(self._h, ctypes.byref(a)))

    def add_metadata(self, name, data):
        """Stores a named metadata blob, written at close."""
        data = data.encode() if isinstance(data, str) else bytes(data)
        self._check(self._lib.edr_pack_add_metadata(self._h, name.encode(), data, len(data)))


def dtype_of(type_name, layout, lib=None):
    """The numpy dtype of a packed layout's records."""
    return _dtype(_numpy(), layout_json(type_name, layout, lib))
