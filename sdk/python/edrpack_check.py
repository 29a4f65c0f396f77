"""Prints what sdk/sdk_test.go compares with the Go API and the edr-lite binary.

    python3 edrpack_check.py DUMP [TIME_NS ...]     the topics; per topic the messages, payload bytes and
                                                    FNV-1a 64 of the payloads in order; for each time
                                                    given the first message after seeking there, and
                                                    how many reading on yields, with the sum of
                                                    FNV-1a 64 of "TOPIC@TIME" over them
    python3 edrpack_check.py filter DUMP FROM TO [TOPIC|!TOPIC ...]   iter_messages' selection,
                                                    printed as the C program's filter mode does
    python3 edrpack_check.py types DUMP              each topic's type, then each (topic, type) the
                                                    messages carry, as the C program's types mode
    python3 edrpack_check.py numpy DUMP TOPIC FROM TO   to_numpy: records and FNV-1a 64 of their bytes
    python3 edrpack_check.py typed OUT               writes the typed dump the C program's typed mode
                                                    writes, through Writer, and reads it back
    python3 edrpack_check.py bench DUMP ROUNDS FROM TO TOPIC   times filtered whole-file reads
    python3 edrpack_check.py where                   the module's file and the library's version

Run from a source tree, the script's directory puts the package in sdk/python first (with
EDRPACK_LIB set); run with `python -I`, the installed package (a wheel) is what it reads.
"""
import sys
import time

import edrpack

FNV0 = 14695981039346656037


def fnv1a(h, data):
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def summary(path, times):
    with edrpack.Dump(path) as d:
        for t in d.topics():
            print("listed", t.topic, t.messages)
        acc, order, n = {}, [], 0
        for topic, _, data in d.messages():
            if topic not in acc:
                acc[topic] = [0, 0, FNV0]
                order.append(topic)
            a = acc[topic]
            a[0] += 1
            a[1] += len(data)
            a[2] = fnv1a(a[2], data)
            n += 1
        print("frames", d.summary()["frames"], "messages", n)
        for topic in order:
            m, b, h = acc[topic]
            print("topic %s %d %d %016x" % (topic, m, b, h))
        for t in times:
            d.seek_time(t)
            for topic, tm, _ in d.messages(with_data=False):
                print("seek %d %s %d" % (t, topic, tm))
                break
            # every message from there on: exactly those with time >= t
            d.seek_time(t)
            n, total = 0, 0
            for topic, tm, _ in d.messages(with_data=False):
                assert tm >= t, (topic, tm, t)
                key = ("%s@%d" % (topic, tm)).encode()
                total = (total + fnv1a(FNV0, key)) & 0xFFFFFFFFFFFFFFFF
                n += 1
            print("after %d messages %d sum %016x" % (t, n, total))
    try:
        edrpack.Dump(path + ".missing")
    except edrpack.EdrError as e:
        print("missing", e.name)


def selection(args):
    """FROM TO [TOPIC|!TOPIC ...] as iter_messages' arguments ("-": unset)."""
    kw = {"topics": [a for a in args[2:] if not a.startswith("!")] or None,
          "exclude": [a[1:] for a in args[2:] if a.startswith("!")] or None}
    if args[0] != "-":
        kw["start_time"] = int(args[0])
    if args[1] != "-":
        kw["end_time"] = int(args[1])
    return kw


def filtered(path, args):
    kw = selection(args)
    with edrpack.Dump(path) as d:
        try:
            it = d.iter_messages(**kw)
        except edrpack.EdrError as e:
            if e.name != "EDR_ENOMATCH":
                raise
            print("nomatch", e.code, e)
            return
        acc, order, n = {}, [], 0
        for _, channel, m in it:
            assert kw.get("start_time") is None or m.log_time >= kw["start_time"]
            assert kw.get("end_time") is None or m.log_time <= kw["end_time"]
            a = acc.get(channel.topic)
            if a is None:
                a = acc[channel.topic] = [0, 0, FNV0]
                order.append(channel.topic)
            a[0] += 1
            a[1] += len(m.data)
            a[2] = fnv1a(a[2], m.data)
            n += 1
    print("frames 0 messages", n)
    for topic in order:
        m, b, h = acc[topic]
        print("topic %s %d %d %016x" % (topic, m, b, h))


def line(what, topic, enc, schema):
    name, senc, data = (schema.name, schema.encoding, schema.data) if schema else ("", "", b"")
    return "%s %s enc=%s name=%s schema=%s len=%d fnv=%016x" % (what, topic, enc, name, senc, len(data), fnv1a(FNV0, data))


def types(path):
    with edrpack.Dump(path) as d:
        for t in d.topics():
            print(line("topic", t.topic, t.message_encoding, t.schema))
        seen = set()
        for schema, channel, _ in d.iter_messages(with_data=False):
            key = (channel.topic, channel.message_encoding, schema)
            if key not in seen:
                seen.add(key)
                print(line("message", channel.topic, channel.message_encoding, schema))


def records(path, topic, start, end):
    with edrpack.Dump(path) as d:
        kw = {}
        if start != "-":
            kw["start_time"] = int(start)
        if end != "-":
            kw["end_time"] = int(end)
        recs = d.to_numpy(topic, **kw)
        print("records %d fnv %016x" % (len(recs), fnv1a(FNV0, recs.tobytes())))


STATE = "# vehicle.State\nf32le speed (m/s); u8 gear; pad 3; i16le wheel[4] (rpm); u64le t (ns)"


def typed(path):
    """Writes the typed dump the C and C++ programs' typed modes write, reads it back."""
    import struct
    t0 = 1700000000000000000
    with edrpack.Writer(path, compression="zstd", writer="edrpack_check.py typed", created_ns=t0) as w:
        assert w.set_packed_type("vehicle/state", "vehicle.State", STATE, t0) == 24
        w.set_json_type("note#driver", "edr.Note", '{"type":"object","properties":{"text":{"type":"string"}}}')
        w.set_type("blob")
        for bad in [("x-edr-packed", "bad", "x-edr-layout", "f33le x"), ("protobuf", "x", "", "")]:
            try:
                w.set_type("bad", *bad)
                raise AssertionError("type %r accepted" % (bad,))
            except edrpack.EdrError as e:
                assert e.name == "EDR_EINVAL", e
        for i in range(50):
            t = t0 + i * 10_000_000
            w.write("vehicle/state", t, struct.pack("<fB3x4hQ", i * 0.5, i % 6, i, -i, i * 100, -32768, t),
                    publish_time=t - 1000, sequence=1000 + i)
            if i % 10 == 0:
                w.write("note#driver", t + 1, '{"text":"mark %d"}' % i)
                w.write("blob", t + 2, b"\x01\x02\x03")
        w.add_attachment("calibration.yaml", "gain: 2.5\n", "application/yaml", t0, t0 - 5)
    with edrpack.Dump(path) as d:
        assert sorted(t.topic for t in d.topics()) == ["blob", "note#driver", "vehicle/state"]
        seqs = [m.sequence for _, _, m in d.iter_messages(topics="vehicle/state", start_time=t0 + 100_000_000,
                                                           end_time=t0 + 199_999_999)]
        assert seqs == list(range(1010, 1020)), seqs
        assert d.attachments()[0].data == b"gain: 2.5\n"
    print("typed ok")


def bench(path, rounds, args):
    kw = selection(args)
    for i in range(rounds):
        t = time.perf_counter_ns()
        n = b = 0
        with edrpack.Dump(path) as d:
            for _, _, m in d.iter_messages(**kw):
                n += 1
                b += len(m.data)
        print("round %d bytes %d messages %d ns %d" % (i, b, n, time.perf_counter_ns() - t), flush=True)


def main(argv):
    mode = argv[0] if argv else ""
    if mode == "filter":
        filtered(argv[1], argv[2:])
    elif mode == "types":
        types(argv[1])
    elif mode == "numpy":
        records(argv[1], argv[2], argv[3], argv[4])
    elif mode == "typed":
        typed(argv[1])
    elif mode == "bench":
        bench(argv[1], int(argv[2]), argv[3:])
    elif mode == "where":
        print("module", edrpack.__file__)
        print("library", edrpack.load().edr_version().decode())
    else:
        summary(argv[0], [int(x) for x in argv[1:]])


if __name__ == "__main__":
    main(sys.argv[1:])
