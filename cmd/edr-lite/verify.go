package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/edr-lite/edr-lite/internal/dumpfile"
	"github.com/edr-lite/edr-lite/internal/filter"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/pack"
)

func init() {
	register(&verb{name: "verify", summary: "check dumps for corruption; exit 1 on any problem", run: runVerify})
	register(&verb{name: "recover", summary: "salvage every intact frame or chunk of a damaged or truncated dump (pack or MCAP)", run: runRecover})
	register(&verb{name: "merge", summary: "merge dumps (pack or MCAP) into one pack dump, in time order", run: runMerge})
}

func runVerify(e *env) int {
	c := newCommand(e, "verify", "edr-lite verify [--strict] FILE...",
		`Read every byte of each dump. A pack dump: header, every frame (bounds,
CRC32C of head and data, meta decoding, decompression), the index and the
trailer; every problem is printed with its byte offset, past damaged regions
too. An MCAP file: every record, each chunk's CRC, the data section CRC, the
summary CRC, and the summary's statistics against the data; the first
problem of the data section is printed (an MCAP reader cannot find the
records after a damaged one). Exit 0 when every file is intact, 1 when any
is not.

--strict also checks that each file follows its format's specification,
as the MCAP CLI's "doctor" does: for MCAP, reserved opcodes, schema id 0,
ids redefined differently, channels and messages referring to ids not
defined before them, each chunk's time range and sizes, the MessageIndex
records against the messages, the summary (its records, Statistics,
ChunkIndex and MetadataIndex records, SummaryOffset groups) against the
data, the footer; for pack, the index's time order and per-topic counts,
bytes and times against the frames, reserved header flags, unique metadata
names, and the dump information against the file (window, per-topic
messages and bytes). A file that is intact but not conformant exits 1.`,
		"edr-lite verify /var/lib/edr-lite/dumps/*.pack\nedr-lite verify --strict dump.mcap", 1, -1)
	strict := c.fs.Bool("strict", false, "also check conformance to the format's specification")
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
			fmt.Fprintf(e.stdout, "  salvage with: edr-lite recover %s -o RECOVERED.%s\n", p, rep.Format)
		case !rep.Complete:
			rc = exitFail
			fmt.Fprintf(e.stdout, "%s: INCOMPLETE (no index/trailer: never closed or cut at a frame boundary); %d intact frames, %d messages\n", p, rep.Records, rep.Messages)
			fmt.Fprintf(e.stdout, "  rebuild the index with: edr-lite recover %s -o RECOVERED.%s\n", p, rep.Format)
		default:
			conform := ""
			if *strict {
				probs, err := dumpfile.Conform(p)
				if err != nil {
					c.fail(err)
					rc = exitFail
					continue
				}
				if len(probs) > 0 {
					rc = exitFail
					fmt.Fprintf(e.stdout, "%s: NOT CONFORMANT, %d problem(s); intact: %d %s, %d messages\n", p, len(probs), rep.Records, records, rep.Messages)
					for _, pr := range probs {
						fmt.Fprintf(e.stdout, "  offset %d: %s\n", pr.Offset, pr.Reason)
					}
					continue
				}
				conform = ", conformant"
			}
			fmt.Fprintf(e.stdout, "%s: ok%s, %s, %d %s, %d messages, %s\n", p, conform, rep.Format, rep.Records, records, rep.Messages, units.FormatSize(rep.Size))
		}
	}
	return rc
}

func runRecover(e *env) int {
	c := newCommand(e, "recover", "edr-lite recover IN -o OUT",
		`Salvage a damaged or truncated dump (cut by a power loss, a leftover .tmp,
a copy cut short) into a new dump of the same format, and say exactly what
was lost (offsets, bytes, frames or chunks, messages when known, time
ranges). OUT always verifies.

A pack dump: every intact frame and metadata section is copied,
resynchronising past damaged regions, and the index is rebuilt.

An MCAP file (as "mcap recover" does): every chunk whose CRC checks out and
every message, schema, channel and metadata record outside a damaged region
is kept, in file order, and the summary (statistics, chunk and metadata
indexes) is rebuilt; past a damaged record it resynchronises on the next
intact chunk. A file cut inside a chunk keeps that chunk's complete records
(reported: no CRC can vouch for them). Channels whose records were lost are
taken from the summary when it survived; otherwise their messages are
counted as lost. Attachments are counted, not copied.

Exit 0 when OUT was written (even if data was lost), 1 when it could not be
or IN holds nothing of a dump (no pack header, frame or section).`,
		"edr-lite recover dumps/20261202T101500Z_hard-brake_0001.pack.tmp -o salvaged.pack\nedr-lite recover cut.mcap -o fixed.mcap", 1, 1)
	out := c.fs.String("o", "", "output `FILE` (required; must not exist)")
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
	if f, err := dumpfile.Detect(args[0]); err == nil {
		ext := strings.ToLower(filepath.Ext(*out))
		if f == dumpfile.FormatMCAP && ext == ".pack" || f == dumpfile.FormatPack && ext == ".mcap" {
			return c.usageErr("%s is %s file and recover writes the same format: name the output .%s (then \"edr-lite merge\" converts it)", args[0], map[string]string{dumpfile.FormatMCAP: "an MCAP", dumpfile.FormatPack: "a pack"}[f], f)
		}
	}
	rep, err := dumpfile.Recover(args[0], *out)
	if err != nil {
		return c.fail(err)
	}
	records := "frames"
	if rep.Format == dumpfile.FormatMCAP {
		records = "chunks"
	}
	fmt.Fprintf(e.stdout, "%s -> %s: salvaged %d %s, %d messages, %d metadata sections\n", args[0], *out, rep.Records, records, rep.Messages, rep.Metadata)
	if rep.HeaderRebuilt {
		fmt.Fprintf(e.stdout, "  the file header was damaged and has been rebuilt\n")
	}
	if rep.Truncated {
		fmt.Fprintf(e.stdout, "  the file ends before its footer (cut short or never closed); the summary has been rebuilt\n")
	}
	if rep.PartialMessages > 0 {
		fmt.Fprintf(e.stdout, "  %d of the messages come from a chunk cut by the end of the file (complete records; no CRC covers them)\n", rep.PartialMessages)
	}
	if len(rep.Lost) == 0 {
		fmt.Fprintf(e.stdout, "  nothing lost\n")
	} else {
		msgs := ""
		if rep.LostMessages > 0 {
			msgs = fmt.Sprintf(", at least %d messages", rep.LostMessages)
		}
		fmt.Fprintf(e.stdout, "  lost %d %s%s, %s in %d region(s):\n", rep.LostRecords, records, msgs, units.FormatSize(rep.LostBytes), len(rep.Lost))
		for _, l := range rep.Lost {
			n := "?"
			if l.Messages >= 0 {
				n = fmt.Sprint(l.Messages)
			}
			fmt.Fprintf(e.stdout, "    offset %d, %d bytes, %d %s, %s messages, time %s .. %s: %s\n", l.Offset, l.Length, l.Records, records, n,
				fmtTime(l.FromNs), fmtTime(l.ToNs), l.Reason)
		}
	}
	if rep.Orphans > 0 {
		fmt.Fprintf(e.stdout, "  lost %d messages whose channel was defined in a lost region\n", rep.Orphans)
	}
	if rep.Attachments > 0 {
		fmt.Fprintf(e.stdout, "  %d attachments not copied (edr-lite does not write attachments)\n", rep.Attachments)
	}
	return exitOK
}

func runMerge(e *env) int {
	c := newCommand(e, "merge", "edr-lite merge IN... -o OUT [--topics G,...] [--exclude G,...] [--from T] [--to T] [--format pack|mcap] [--compression none|lz4|zstd]",
		`Merge several dumps into one dump (pack, or MCAP with --format mcap or an
-o ending in .mcap), message by message in capture-time order (ties keep the
order of the inputs). Inputs are pack or MCAP files, in any mix (an MCAP file
is read in log_time order, its channels as topics, its edr.* metadata as the
dump information). Every trigger of every input is kept and per-topic
accounting is summed, so the merged file still says what was lost. One MCAP
input makes a pack dump of it.

With a selection the output is a cut of the inputs (see "edr-lite filter"):
only the triggers inside the window, and its dump information counts what
was left out.

`+selectHelp,
		"edr-lite merge a.pack b.mcap -o both.pack --compression zstd\nedr-lite merge dump.mcap -o dump.pack\nedr-lite merge front.pack rear.pack -o brake.mcap --from 2s --to 4s", 1, -1)
	sf := declareSelectFlags(c)
	wf := declareWriteFlags(c, "output `FILE` (required; must not exist)")
	args, format, sel, code, ok := c.parseRewrite(sf, wf)
	if !ok {
		return code
	}
	if _, err := os.Stat(*wf.out); err == nil {
		return c.fail(fmt.Errorf("%s exists; refusing to overwrite", *wf.out))
	}
	infos, err := readInfos(args)
	if err != nil {
		return c.fail(err)
	}
	held, fromNs, toNs, usage, err := selectIn(sel, infos...)
	if usage != nil {
		return c.usageErr("%v", usage)
	}
	if err != nil {
		return c.fail(err)
	}
	opts := dumpfile.RewriteOptions{Format: format, Compression: *wf.comp, Writer: "edr-lite merge", Topics: sel.Topics}
	if fromNs != filter.MinNs || toNs != filter.MaxNs {
		opts.Window = &dumpfile.Window{FromNs: fromNs, ToNs: toNs}
	}
	rep, err := rewrite(c, args, *wf.out, opts, totalMessages(infos), "merging")
	if err != nil {
		if errors.Is(err, dumpfile.ErrEmpty) {
			err = sel.Empty(held, fromNs, toNs)
		}
		return c.fail(err)
	}
	p := &rep.Parts[0]
	fmt.Fprintf(e.stdout, "%s: %d inputs, %d messages, %s, %d triggers\n", *wf.out, rep.Inputs, rep.Messages, units.FormatSize(int64(rep.Bytes)), p.Triggers)
	if !sel.All() {
		printLeftOut(e, p)
	}
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
