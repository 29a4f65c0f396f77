"""Prints what sdk/sdk_test.go compares: the topics of a dump, per topic the
messages, payload bytes and FNV-1a 64 of the payloads in order, and for each
time given the first message after seeking there.

    EDRPACK_LIB=libedrpack.so python3 edrpack_check.py DUMP [TIME_NS ...]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import edrpack  # noqa: E402


def fnv1a(h, data):
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def main(path, times):
    with edrpack.Dump(path) as d:
        for t in d.topics():
            print("listed", t.topic, t.messages)
        acc, order, n = {}, [], 0
        for topic, _, data in d.messages():
            if topic not in acc:
                acc[topic] = [0, 0, 14695981039346656037]
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
    try:
        edrpack.Dump(path + ".missing")
    except edrpack.EdrError as e:
        print("missing", e.name)


if __name__ == "__main__":
    main(sys.argv[1], [int(x) for x in sys.argv[2:]])
