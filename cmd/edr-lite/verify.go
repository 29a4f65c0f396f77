package main

import (
	"fmt"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/edr-lite/edr-lite/internal/dumpfile"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/pack"
)

func init() {
	register(&verb{name: "verify", summary: "check dumps for corruption; exit 1 on any problem", run: runVerify})
	register(&verb{name: "recover", summary: "salvage every intact frame of a damaged or truncated dump", run: runRecover})
	register(&verb{name: "merge", summary: "merge dumps (pack or MCAP) into one pack dump, in time order", run: runMerge})
}

func runVerify(e *env) int {
	c := newCommand(e, "verify", "edr-lite verify FILE...",
		`Read every byte of each dump. A pack dump: header, every frame (bounds,
CRC32C of head and data, meta decoding, decompression), the index and the
trailer; every problem is printed with its byte offset, past damaged regions
too. An MCAP file: every record, each chunk's CRC, the data section CRC, the
summary CRC, and the summary's statistics against the data; the first
problem of the data section is printed (an MCAP reader cannot find the
records after a damaged one). Exit 0 when every file is intact, 1 when any
is not.`,
		"edr-lite verify /var/lib/edr-lite/dumps/*.pack\nedr-lite verify dump.mcap", 1, -1)
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	rc := exitOK
	for _, p := range args {
		rep, err := dumpfile.Verify(p)
		if err != nil {
			c.fail(err)
			rc = exitFail
			continue
		}
		records, isPack := "frames", rep.Format == dumpfile.FormatPack
		if !isPack {
			records = "chunks"
		}
		switch {
		case len(rep.Problems) > 0:
			rc = exitFail
			if isPack {
				fmt.Fprintf(e.stdout, "%s: CORRUPT, %d problem(s); %d intact %s, %d messages\n", p, len(rep.Problems), rep.Records, records, rep.Messages)
			} else { // the MCAP reader stops at the first damaged record
				fmt.Fprintf(e.stdout, "%s: CORRUPT, %d problem(s)\n", p, len(rep.Problems))
			}
			for _, pr := range rep.Problems {
				fmt.Fprintf(e.stdout, "  offset %d: %s\n", pr.Offset, pr.Reason)
			}
			if isPack {
				fmt.Fprintf(e.stdout, "  salvage with: edr-lite recover %s -o RECOVERED.pack\n", p)
			}
		case !rep.Complete:
			rc = exitFail
			fmt.Fprintf(e.stdout, "%s: INCOMPLETE (no index/trailer: never closed or cut at a frame boundary); %d intact frames, %d messages\n", p, rep.Records, rep.Messages)
			fmt.Fprintf(e.stdout, "  rebuild the index with: edr-lite recover %s -o RECOVERED.pack\n", p)
		default:
			fmt.Fprintf(e.stdout, "%s: ok, %s, %d %s, %d messages, %s\n", p, rep.Format, rep.Records, records, rep.Messages, units.FormatSize(rep.Size))
		}
	}
	return rc
}

func runRecover(e *env) int {
	c := newCommand(e, "recover", "edr-lite recover IN -o OUT",
		`Copy every intact frame and metadata section of IN (damaged, truncated by a
power loss, or a leftover .tmp) to OUT, resynchronising past damaged regions,
and rebuild the index. Prints what was salvaged and exactly what was lost
(offsets, bytes, frames, time ranges). OUT always verifies. Exit 0 when OUT
was written (even if data was lost), 1 when it could not be or IN holds
nothing of a pack dump (no header, frame or section).`,
		"edr-lite recover dumps/20261202T101500Z_hard-brake_0001.pack.tmp -o salvaged.pack", 1, 1)
	out := c.fs.String("o", "", "output file (required; must not exist)")
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	if *out == "" {
		return c.usageErr("-o OUT is required")
	}
	if _, err := os.Stat(*out); err == nil {
		return c.fail(fmt.Errorf("%s exists; refusing to overwrite", *out))
	}
	if f, err := dumpfile.Detect(args[0]); err == nil && f == dumpfile.FormatMCAP {
		return c.fail(fmt.Errorf("%s is an MCAP file: recover salvages pack dumps ('edr-lite verify %s' says what is wrong with it)", args[0], args[0]))
	}
	rep, err := pack.RecoverWith(args[0], *out, pack.ReaderOptions{MaxMemory: dumpfile.MaxMemory()})
	if err != nil {
		return c.fail(err)
	}
	if rep.HeaderRebuilt && rep.Frames == 0 && rep.Metadata == 0 {
		os.Remove(*out)
		return c.fail(fmt.Errorf("%s: no pack header, frame or section found: not a pack dump (nothing salvaged)", args[0]))
	}
	fmt.Fprintf(e.stdout, "%s -> %s: salvaged %d frames, %d messages, %d metadata sections\n", args[0], *out, rep.Frames, rep.Messages, rep.Metadata)
	if rep.HeaderRebuilt {
		fmt.Fprintf(e.stdout, "  the file header was damaged and has been rebuilt\n")
	}
	if len(rep.Lost) == 0 {
		fmt.Fprintf(e.stdout, "  nothing lost\n")
	} else {
		fmt.Fprintf(e.stdout, "  lost %d frames, %s in %d region(s):\n", rep.LostFrames, units.FormatSize(rep.LostBytes), len(rep.Lost))
		for _, l := range rep.Lost {
			fmt.Fprintf(e.stdout, "    offset %d, %d bytes, %d frames, time %s .. %s: %s\n", l.Offset, l.Length, l.Frames, fmtTime(l.FromNs), fmtTime(l.ToNs), l.Reason)
		}
	}
	return exitOK
}

func runMerge(e *env) int {
	c := newCommand(e, "merge", "edr-lite merge IN... -o OUT [--compression none|lz4|zstd]",
		`Merge several dumps into one pack dump, message by message in capture-time
order (ties keep the order of the inputs). Inputs are pack or MCAP files, in
any mix (an MCAP file is read in log_time order, its channels as topics, its
edr.* metadata as the dump information). Every trigger of every input is
kept and per-topic accounting is summed, so the merged file still says what
was lost. One MCAP input makes a pack dump of it.`,
		"edr-lite merge a.pack b.mcap -o both.pack --compression zstd\nedr-lite merge dump.mcap -o dump.pack", 1, -1)
	out := c.fs.String("o", "", "output file (required; must not exist)")
	comp := c.fs.String("compression", "none", "compression of the output frames: none, lz4 or zstd")
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	if *out == "" {
		return c.usageErr("-o OUT is required")
	}
	cp, err := parseCompression(*comp)
	if err != nil {
		return c.usageErr("%v", err)
	}
	if _, err := os.Stat(*out); err == nil {
		return c.fail(fmt.Errorf("%s exists; refusing to overwrite", *out))
	}
	var total uint64
	for _, p := range args {
		in, err := dumpfile.ReadInfo(p)
		if err != nil {
			return c.fail(err)
		}
		total += in.Messages
	}
	var progress func(uint64)
	if isTerminal(e.stderr) {
		bar := progressbar.NewOptions64(int64(total), progressbar.OptionSetWriter(e.stderr),
			progressbar.OptionSetDescription("merging"), progressbar.OptionShowCount(),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		progress = func(n uint64) { bar.Set64(int64(n)) }
		defer bar.Finish()
	}
	rep, err := dumpfile.Merge(args, *out, pack.WriterOptions{Compression: cp}, progress)
	if err != nil {
		os.Remove(*out)
		return c.fail(err)
	}
	fmt.Fprintf(e.stdout, "%s: %d inputs, %d messages, %s, %d triggers\n", *out, rep.Inputs, rep.Messages, units.FormatSize(int64(rep.Bytes)), rep.Triggers)
	return exitOK
}

func parseCompression(s string) (pack.Compression, error) {
	switch s {
	case "none", "":
		return pack.CompressNone, nil
	case "lz4":
		return pack.CompressLZ4, nil
	case "zstd":
		return pack.CompressZstd, nil
	}
	return 0, fmt.Errorf("compression %q: want none, lz4 or zstd", s)
}
