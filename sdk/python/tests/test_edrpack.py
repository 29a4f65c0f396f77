"""The edrpack package's own tests: standard library unittest, no input but what they write.

    python3 -m unittest discover -s sdk/python/tests        (from a source tree: EDRPACK_LIB set)

sdk/sdk_test.go (TestPythonWheel) runs them in a fresh virtual environment the wheel was
installed into, with EDRPACK_EXPECT_INSTALLED=1: the package under test is the installed one.
"""
import os
import struct
import tempfile
import unittest

import edrpack

try:
    import numpy
except ImportError:
    numpy = None

T0 = 1_700_000_000_000_000_000
MS = 1_000_000
STATE = "# vehicle.State\nf32le speed (m/s); u8 gear; pad 3; i16le wheel[4] (rpm); u64le t (ns)"
STATE_FMT = "<fB3x4hQ"


def write_typed(path, n=200, frame_bytes=0):
    """A typed dump: vehicle/state (packed), note#driver (JSON), blob (raw), an attachment;
    frame_bytes > 0 adds a big raw topic so that the file has many frames."""
    with edrpack.Writer(path, compression="lz4", writer="test_edrpack.py", created_ns=T0) as w:
        size = w.set_packed_type("vehicle/state", "vehicle.State", STATE)
        assert size == struct.calcsize(STATE_FMT), size
        w.set_json_type("note#driver", "edr.Note", {"type": "object", "properties": {"text": {"type": "string"}}})
        w.set_type("blob")
        for i in range(n):
            t = T0 + i * 10 * MS
            w.write("vehicle/state", t, struct.pack(STATE_FMT, i * 0.5, i % 6, i, -i, 100 * i, -32768, t),
                    publish_time=t - 1000, sequence=1000 + i)
            if i % 10 == 0:
                w.write("note#driver", t + 1, {"text": "mark %d" % i})
                w.write("blob", t + 2, b"\x01\x02\x03")
            if frame_bytes:
                w.write("camera/raw", t + 3, bytes([i % 251]) * frame_bytes)
        w.add_attachment("calibration.yaml", "gain: 2.5\n", "application/yaml", T0, T0 - 5)


class EdrpackTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "typed.pack")
        write_typed(self.path)

    def tearDown(self):
        self.dir.cleanup()

    def test_installed(self):
        lib = edrpack.load()
        self.assertTrue(lib.edr_version().decode().startswith("libedrpack %d " % edrpack.API_VERSION))
        if os.environ.get("EDRPACK_EXPECT_INSTALLED") == "1":
            here = os.path.dirname(edrpack.__file__)
            self.assertIn("site-packages", here)
            self.assertTrue(os.path.exists(os.path.join(here, "libedrpack.so")), "the wheel carries the library")
            self.assertNotIn("EDRPACK_LIB", os.environ)

    def test_types(self):
        with edrpack.Dump(self.path) as d:
            ts = {t.topic: t for t in d.topics()}
            self.assertEqual(sorted(ts), ["blob", "note#driver", "vehicle/state"])
            st = ts["vehicle/state"]
            self.assertEqual((st.message_encoding, st.type, st.messages, st.n_types), ("x-edr-packed", "vehicle.State", 200, 1))
            self.assertEqual(st.schema, edrpack.Schema("vehicle.State", "x-edr-layout", STATE.encode()))
            self.assertEqual(ts["note#driver"].schema.encoding, "jsonschema")
            self.assertEqual((ts["blob"].message_encoding, ts["blob"].schema), ("x-edr-raw", None))
            self.assertEqual(d.attachments(), [edrpack.Attachment("calibration.yaml", "application/yaml", T0, T0 - 5, b"gain: 2.5\n")])

    def test_iter_messages(self):
        with edrpack.Dump(self.path) as d:
            seen = list(d.iter_messages())
            self.assertEqual(len(seen), 240)
            schema, channel, msg = seen[0]
            self.assertEqual(channel, edrpack.Channel("vehicle/state", "vehicle/state", "", "x-edr-packed"))
            self.assertEqual(schema.name, "vehicle.State")
            self.assertEqual((msg.log_time, msg.publish_time, msg.sequence), (T0, T0 - 1000, 1000))
            self.assertEqual(struct.unpack(STATE_FMT, msg.data)[6], T0)
            notes = [(s, c, m) for s, c, m in seen if c.topic == "note#driver"]
            self.assertEqual(notes[1][2].data, b'{"text":"mark 10"}')
            self.assertEqual((notes[1][1].name, notes[1][1].channel, notes[1][2].sequence), ("note", "driver", None))
            # the same Schema and Channel objects for every message of a topic's type
            states = [(s, c) for s, c, _ in seen if c.topic == "vehicle/state"]
            self.assertTrue(all(s is states[0][0] and c is states[0][1] for s, c in states))

    def test_filters(self):
        with edrpack.Dump(self.path) as d:
            def times(**kw):
                return [m.log_time for _, _, m in d.iter_messages(**kw)]
            a, b = T0 + 50 * 10 * MS, T0 + 60 * 10 * MS
            self.assertEqual(times(topics="vehicle/state", start_time=a, end_time=b), [T0 + i * 10 * MS for i in range(50, 61)])  # both ends inclusive
            self.assertEqual(len(times(topics=["vehicle/*", "note"])), 220)
            self.assertEqual(len(times(exclude="vehicle/*")), 40)
            self.assertEqual(times(topics="note", end_time=T0 + 15 * MS), [T0 + 1])
            self.assertEqual(times(start_time=T0 + 10_000 * MS), [])  # a window the file holds nothing in
            with self.assertRaises(edrpack.EdrError) as e:
                d.iter_messages(topics="vehicle/stat")  # a typo
            self.assertEqual(e.exception.name, "EDR_ENOMATCH")
            self.assertIn("note#driver", str(e.exception))
            with self.assertRaises(edrpack.EdrError) as e:
                d.iter_messages(start_time=5, end_time=4)
            self.assertEqual(e.exception.name, "EDR_EINVAL")

    def test_iterators_do_not_share_a_cursor(self):
        with edrpack.Dump(self.path) as d:
            one, two = d.iter_messages(topics="vehicle/state"), d.iter_messages(topics="vehicle/state")
            a = [next(one)[2].log_time for _ in range(5)]
            b = [next(two)[2].log_time for _ in range(5)]
            self.assertEqual(a, b)
            self.assertEqual(next(one)[2].log_time, a[-1] + 10 * MS)
            # frames() and messages() share the Dump's cursor: a second one ends the first, loudly
            g1 = d.messages()
            next(g1)
            g2 = d.messages()
            next(g2)
            with self.assertRaises(edrpack.EdrError) as e:
                next(g1)
            self.assertIn("moved this Dump's cursor", str(e.exception))
            rest = sum(1 for _ in g2)  # from where g1 left the shared cursor: the frames after its first
            self.assertTrue(0 < rest < 239, rest)

    @unittest.skipIf(numpy is None, "numpy is not installed")
    def test_to_numpy(self):
        with edrpack.Dump(self.path) as d:
            dt = d.dtype("vehicle/state")
            self.assertEqual(dt.itemsize, 24)
            self.assertEqual(dt.names, ("speed", "gear", "wheel", "t"))
            self.assertEqual(dt.fields["t"][1], 16)
            recs = d.to_numpy("vehicle/state")
            self.assertEqual(len(recs), 200)
            self.assertEqual(recs["speed"][7], 3.5)
            self.assertEqual(list(recs["wheel"][3]), [3, -3, 300, -32768])
            self.assertTrue((recs["t"] == T0 + numpy.arange(200) * 10 * MS).all())
            ts, part = d.to_numpy("vehicle/state", start_time=T0 + 100 * 10 * MS, end_time=T0 + 109 * 10 * MS, times=True)
            self.assertEqual(list(part["gear"]), [i % 6 for i in range(100, 110)])
            self.assertTrue((ts == part["t"].astype(numpy.int64)).all())
            # one message's bytes, no copy
            _, _, m = next(d.iter_messages(topics="vehicle/state"))
            one = numpy.frombuffer(m.data, dtype=dt)
            self.assertEqual(one["t"][0], T0)
            with self.assertRaises(edrpack.EdrError):
                d.to_numpy("note#driver")  # JSON, not a packed layout
            with self.assertRaises(edrpack.EdrError):
                d.to_numpy("vehicle/nosuch")

    @unittest.skipIf(numpy is None, "numpy is not installed")
    def test_write_numpy(self):
        path = os.path.join(self.dir.name, "np.pack")
        dt = edrpack.dtype_of("vehicle.State", STATE)
        recs = numpy.zeros(20, dtype=dt)
        recs["speed"] = numpy.arange(20) / 4
        recs["wheel"][:, 1] = -7
        with edrpack.Writer(path) as w:
            w.set_packed_type("vehicle/state", "vehicle.State", STATE)
            w.write_numpy("vehicle/state", T0 + numpy.arange(20) * MS, recs)
            with self.assertRaises(edrpack.EdrError):
                w.write_numpy("vehicle/state", [T0], numpy.zeros(1, dtype="<u4"))  # 4 bytes, not 24
        with edrpack.Dump(path) as d:
            back = d.to_numpy("vehicle/state")
            self.assertEqual(back.tobytes(), recs.tobytes())

    def test_writer_refusals(self):
        with edrpack.Writer(os.path.join(self.dir.name, "bad.pack")) as w:
            with self.assertRaises(edrpack.EdrError) as e:
                w.set_packed_type("x", "X", "f33le a")
            self.assertIn("layout:1:", str(e.exception))
            w.set_packed_type("y", "Y", "u32le a")
            with self.assertRaises(edrpack.EdrError):
                w.write("y", T0, b"\x01")  # shorter than its record
            with self.assertRaises(edrpack.EdrError):
                w.set_type("z", "protobuf", "", "", b"")  # protobuf needs its schema

    def test_skip_damaged(self):
        path = os.path.join(self.dir.name, "big.pack")
        write_typed(path, n=100, frame_bytes=60_000)  # many frames of about 4 MiB
        with edrpack.Dump(path) as d:
            total = sum(1 for _ in d.iter_messages())
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) // 2)
            b = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([b[0] ^ 0x10]))
        with edrpack.Dump(path, skip_damaged=True) as d:
            it = d.iter_messages()
            n = sum(1 for _ in it)
            sk = it.skipped()
        self.assertLess(n, total)
        self.assertGreater(n, total // 2)
        self.assertEqual(sk["regions"], 1)
        with edrpack.Dump(path) as d:
            with self.assertRaises(edrpack.EdrError) as e:
                for _ in d.iter_messages():
                    pass
        self.assertEqual(e.exception.name, "EDR_ECORRUPT")
        self.assertGreater(e.exception.offset, 0)

    def test_errors_name_the_file(self):
        with self.assertRaises(edrpack.EdrError) as e:
            edrpack.Dump(os.path.join(self.dir.name, "missing.pack"))
        self.assertIn("missing.pack", str(e.exception))
        self.assertEqual(e.exception.name, "EDR_EIO")


if __name__ == "__main__":
    unittest.main()
