package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/internal/filter"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/pack"
)

func init() {
	register(&verb{name: "verify", summary: "check dumps for corruption; exit 1 on any problem", run: runVerify})
	register(&verb{name: "recover", summary: "salvage every intact frame or chunk of a damaged or truncated dump (pack or MCAP)", run: runRecover})
	register(&verb{name: "merge", summary: "merge dumps (pack or MCAP) into one pack or MCAP dump, in time order", run: runMerge})
}

func runVerify(e *env) int {
	c := newCommand(e, "verify", "edr-lite verify [--strict] [--key PUB]... [--chain DIR] FILE...",
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
messages and bytes). A file that is intact but not conformant exits 1.

A signed dump (docs/evidence.md) is also checked against its seal: every
byte but the seal's own is hashed and compared with the digest signed, and
the signature is checked with the public keys given with --key. "signed by
KEY-ID, valid" means the file is byte for byte what the key's holder
signed; anything else (a changed byte, a cut or extended file, a seal of
another file, a key not given, no signature at all) exits 1 with --key,
saying why. Without --key a seal's digest is checked, not its signature.

--chain DIR checks the dumps of a recorder's dump directory against its
chain (each dump records the one before it; the signed ledger .edr-chain
lists them, rotated ones marked): a dump deleted (not rotated), replaced,
renamed or swapped, or a file that is not in the chain is reported, with
the dumps around the gap. It needs --key.`,
		"edr-lite verify /var/lib/edr-lite/dumps/*.pack\nedr-lite verify --strict dump.mcap\nedr-lite verify --key vehicle-42.pub dump.pack\nedr-lite verify --key fleet-keys.pem --chain /var/lib/edr-lite/dumps", 0, -1)
	strict := c.fs.Bool("strict", false, "also check conformance to the format's specification")
	keyFiles := declareKeyFlag(c)
	chainDir := c.fs.String("chain", "", "check the chain of the dump directory `DIR` (needs --key)")
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	if len(args) == 0 && *chainDir == "" {
		return c.usageErr("no FILE given (or --chain DIR)")
	}
	if *chainDir != "" && len(*keyFiles) == 0 {
		return c.usageErr("--chain %s needs --key: the dumps' and the ledger's signatures are checked against it", *chainDir)
	}
	keys, err := keyFiles.load()
	if err != nil {
		return c.fail(err)
	}
	checkKeys := len(*keyFiles) > 0
	rc := exitOK
	for _, p := range args {
		rep, err := dumpfile.Verify(p)
		if err != nil {
			c.fail(err)
			rc = exitFail
			if checkKeys {
				fmt.Fprintf(e.stdout, "%s: unreadable\n", p)
				verifySeal(c, p, keys, checkKeys)
			}
			continue
		}
		records, isPack := "frame", rep.Format == dumpfile.FormatPack
		if !isPack {
			records = "chunk"
		}
		switch {
		case len(rep.Problems) > 0:
			rc = exitFail
			if isPack {
				fmt.Fprintf(e.stdout, "%s: CORRUPT, %d problem(s); %s, %d messages\n", p, len(rep.Problems), count(rep.Records, "intact "+records), rep.Messages)
			} else { // the MCAP reader stops at the first damaged record
				fmt.Fprintf(e.stdout, "%s: CORRUPT, %d problem(s)\n", p, len(rep.Problems))
			}
			for _, pr := range rep.Problems {
				fmt.Fprintf(e.stdout, "  offset %d: %s\n", pr.Offset, pr.Reason)
			}
			if rep.Salvageable {
				fmt.Fprintf(e.stdout, "  salvage with: edr-lite recover %s -o RECOVERED.%s\n", p, rep.Format)
			} else {
				fmt.Fprintf(e.stdout, "  nothing can be salvaged: %s\n", nothingIntact(rep.Format))
			}
		case !rep.Complete:
			rc = exitFail
			fmt.Fprintf(e.stdout, "%s: INCOMPLETE (no index/trailer: never closed or cut at a frame boundary); %s, %d messages\n", p, count(rep.Records, "intact frame"), rep.Messages)
			if rep.Salvageable {
				fmt.Fprintf(e.stdout, "  rebuild the index with: edr-lite recover %s -o RECOVERED.%s\n", p, rep.Format)
			} else {
				fmt.Fprintf(e.stdout, "  nothing can be salvaged: %s\n", nothingIntact(rep.Format))
			}
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
					fmt.Fprintf(e.stdout, "%s: NOT CONFORMANT, %d problem(s); intact: %s, %d messages\n", p, len(probs), count(rep.Records, records), rep.Messages)
					for _, pr := range probs {
						fmt.Fprintf(e.stdout, "  offset %d: %s\n", pr.Offset, pr.Reason)
					}
					continue
				}
				conform = ", conformant"
			}
			fmt.Fprintf(e.stdout, "%s: ok%s, %s, %s, %d messages, %s\n", p, conform, rep.Format, count(rep.Records, records), rep.Messages, units.FormatSize(rep.Size))
		}
		if !verifySeal(c, p, keys, checkKeys) {
			rc = exitFail
		}
	}
	if *chainDir != "" {
		ok, err := verifyChain(c, e.stdout, *chainDir, keys)
		if err != nil {
			c.fail(err)
			rc = exitFail
		} else if !ok {
			rc = exitFail
		}
	}
	return rc
}

// verifySeal prints the signature line of p (when it is sealed, or keys
// were given) and reports whether it holds: with keys, only a valid
// signature does; without, only a seal whose digest does not match (or an
// unreadable one) fails.
func verifySeal(c *command, p string, keys *evidence.Keyring, checkKeys bool) bool {
	v, err := dumpfile.CheckSeal(p, keys)
	if err != nil {
		c.fail(err)
		return false
	}
	if v.Status == evidence.Unsigned && !checkKeys && v.Reason == "" {
		return true
	}
	word := "  signature: "
	if checkKeys && !v.OK() || v.Status == evidence.Invalid {
		word = "  SIGNATURE: "
	}
	fmt.Fprintf(c.e.stdout, "%s%s\n", word, signatureText(v))
	if checkKeys {
		return v.OK()
	}
	return v.Status != evidence.Invalid
}

// nothingIntact says why verify does not suggest recover for a file.
func nothingIntact(format string) string {
	if format == dumpfile.FormatPack {
		return "the file holds no intact frame or metadata section (edr-lite recover would keep nothing)"
	}
	return "the file holds no intact message or metadata record (edr-lite recover would find nothing)"
}

func runRecover(e *env) int {
	c := newCommand(e, "recover", "edr-lite recover IN -o OUT",
		`Salvage a damaged or truncated dump (cut by a power loss, a leftover .tmp,
a copy cut short) into a new dump of the same format, and say exactly what
was lost (offsets, bytes, frames or chunks, messages when known, time
ranges). OUT always verifies.

A pack dump: every intact frame and metadata, type and attachment section
is copied, resynchronising past damaged regions, and the index is rebuilt.

An MCAP file (as "mcap recover" does): every chunk whose CRC checks out and
every message, schema, channel, attachment and metadata record outside a
damaged region is kept, in file order, and the summary (statistics, chunk,
attachment and metadata indexes) is rebuilt; past a damaged record it
resynchronises on the next intact chunk. A file cut inside a chunk keeps
that chunk's complete records (reported: no CRC can vouch for them).
Channels whose records were lost are taken from the summary when it
survived; otherwise their messages are counted as lost. An attachment whose
CRC does not match is a lost region.

An MP4 (camera video cut short: a copy interrupted, power lost while
recording): every sample of its H.264/H.265 track wholly before the cut,
remuxed into a valid MP4 (times, key frames, timescale and creation time
kept); the samples lost are counted. Other tracks (audio) are not copied,
and named. A file cut before its moov box (written last by default) has
no sample tables: nothing can be salvaged.

Exit 0 when OUT was written (even if data was lost), 1 when it could not be
or IN holds nothing of a dump (no pack header, frame or section).`,
		"edr-lite recover dumps/20261202T101500Z_hard-brake_0001.pack.tmp -o salvaged.pack\nedr-lite recover cut.mcap -o fixed.mcap\nedr-lite recover front-camera.mp4 -o front-salvaged.mp4", 1, 1)
	out := c.fs.String("o", "", "output `FILE` (required; must not exist)")
	sf := declareStampFlags(c)
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
	var stamp *dumpfile.Stamp
	if f, err := dumpfile.Detect(args[0]); err == nil {
		if f == dumpfile.FormatMP4 && (*sf.signKey != "" || len(*sf.keys) > 0) {
			return c.usageErr("--sign-key and --key are for pack and MCAP dumps: a salvaged MP4 carries no signature")
		}
		if f != dumpfile.FormatMP4 {
			if stamp, err = sf.stamp(c, args[:1]); err != nil {
				return c.fail(err)
			}
		}
		if code, ok := sameFormatName(c, args[0], f, *out); !ok {
			return code
		}
		if f == dumpfile.FormatMP4 && strings.ToLower(filepath.Ext(*out)) != ".mp4" {
			return c.usageErr("%s is an MP4 file and recover writes the same format: name the output .mp4 (then \"edr-lite import\" reads it)", args[0])
		}
	}
	rep, err := dumpfile.RecoverStamped(args[0], *out, stamp)
	if err != nil {
		return c.fail(err)
	}
	if rep.Format == dumpfile.FormatMP4 {
		fmt.Fprintf(e.stdout, "%s -> %s: salvaged %d samples of the video track, remuxed\n", args[0], *out, rep.Records)
		for _, n := range rep.Notes {
			fmt.Fprintf(e.stdout, "  %s\n", n)
		}
		for _, l := range rep.Lost {
			fmt.Fprintf(e.stdout, "  %s\n", l.Reason)
		}
		if len(rep.Lost) == 0 {
			fmt.Fprintf(e.stdout, "  nothing lost\n")
		}
		return exitOK
	}
	records := "frame"
	if rep.Format == dumpfile.FormatMCAP {
		records = "chunk"
	}
	fmt.Fprintf(e.stdout, "%s -> %s: salvaged %s, %d messages, %d metadata sections%s\n", args[0], *out, count(rep.Records, records), rep.Messages, rep.Metadata,
		plural(rep.Attachments, ", %d attachment", ", %d attachments"))
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
		fmt.Fprintf(e.stdout, "  lost %s%s, %s in %d region(s):\n", count(rep.LostRecords, records), msgs, units.FormatSize(rep.LostBytes), len(rep.Lost))
		for _, l := range rep.Lost {
			n := "?"
			if l.Messages >= 0 {
				n = fmt.Sprint(l.Messages)
			}
			fmt.Fprintf(e.stdout, "    offset %d, %d bytes, %s, %s messages, time %s .. %s: %s\n", l.Offset, l.Length, count(l.Records, records), n,
				fmtTime(l.FromNs), fmtTime(l.ToNs), l.Reason)
		}
	}
	if rep.Orphans > 0 {
		fmt.Fprintf(e.stdout, "  lost %d messages whose channel was defined in a lost region\n", rep.Orphans)
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
	held, fromNs, toNs, usage, err := c.selectIn(sel, infos...)
	if usage != nil {
		return c.usageErr("%v", usage)
	}
	if err != nil {
		return c.fail(err)
	}
	opts := dumpfile.RewriteOptions{Format: format, Compression: *wf.comp, Writer: "edr-lite merge", Topics: dumpfile.TopicFilter(sel.Topics)}
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
	fmt.Fprintf(e.stdout, "%s: %d inputs, %d messages, %s, %d triggers%s\n", *wf.out, rep.Inputs, rep.Messages, units.FormatSize(int64(rep.Bytes)), p.Triggers,
		plural(rep.Attachments, ", %d attachment", ", %d attachments"))
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

// count formats n of a noun: "1 frame", "2 frames".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// plural formats n with one (n == 1) or many; "" when n is 0.
func plural(n int, one, many string) string {
	switch n {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(one, n)
	}
	return fmt.Sprintf(many, n)
}
