package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// otherMCAP is a file of testdata/other (the reference TypeScript writer's,
// and the hand-built padded ones).
func otherMCAP(name string) string {
	return filepath.Join("..", "..", "mcap", "testdata", "other", name+".mcap")
}

// paddedFiles are the MCAP files whose records carry bytes after their
// fields (mcap/padded_test.go): fields of a later version of the
// specification, which readers ignore.
var paddedFiles = []string{"padded-chunked", "padded-unchunked", "padded-no-summary"}

// TestE2EPaddedRecords: verify (and verify --strict), info, cat and export
// accept MCAP files whose records are longer than their fields (issue 31
// item 6: verify said "fields do not fill the record" of an Attachment with
// bytes after its CRC while the other verbs read the file).
func TestE2EPaddedRecords(t *testing.T) {
	for _, name := range paddedFiles {
		in := otherMCAP(name)
		for _, args := range [][]string{
			{"verify", in},
			{"verify", "--strict", in},
			{"info", in},
			{"cat", in},
			{"export", "--format", "jsonl", in, "-o", "-"},
		} {
			code, out, errs := runBin(t, args...)
			if code != 0 {
				t.Errorf("%s: %v: exit %d\n%s%s", name, args, code, out, errs)
			}
			if args[0] == "verify" && !strings.Contains(out, ": ok") {
				t.Errorf("%s: %v: %s", name, args, out)
			}
		}
	}
}

// nodeMCAP is what mcap/testdata/node/validate.mjs reports of one file
// (the parts these tests read).
type nodeMCAP struct {
	Error      string `json:"error"`
	NotIndexed bool   `json:"notIndexed"`
	Indexed    *struct {
		Attachments []nodeAttachment `json:"attachments"`
		Metadata    []nodeMetadata   `json:"metadata"`
	} `json:"indexed"`
	Stream struct {
		Topics map[string]struct {
			Messages int    `json:"messages"`
			Bytes    int    `json:"bytes"`
			Sha256   string `json:"sha256"`
			Seqs     string `json:"seqs"`
		} `json:"topics"`
		Records     map[string]int   `json:"records"`
		Metadata    []nodeMetadata   `json:"metadata"`
		Attachments []nodeAttachment `json:"attachments"`
	} `json:"stream"`
}

type nodeMetadata struct {
	Name string            `json:"name"`
	KV   map[string]string `json:"kv"`
}

type nodeAttachment struct {
	Name       string `json:"name"`
	MediaType  string `json:"mediaType"`
	LogTime    string `json:"logTime"`
	CreateTime string `json:"createTime"`
	Size       int    `json:"size"`
	Sha256     string `json:"sha256"`
}

// nodeValidate reads files with the reference TypeScript reader
// (@mcap/core, indexed and streamed) through validate.mjs; it skips the
// test when node or the npm packages are missing.
func nodeValidate(t *testing.T, files ...string) map[string]nodeMCAP {
	t.Helper()
	dir := nodeDecoder(t)
	var abs []string
	for _, f := range files {
		a, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		abs = append(abs, a)
	}
	cmd := exec.Command("node", append([]string{"validate.mjs"}, abs...)...)
	cmd.Dir = dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node validate.mjs: %v\n%s", err, errb.String())
	}
	var res map[string]nodeMCAP
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("validate.mjs output: %v\n%.2000s", err, out)
	}
	byFile := map[string]nodeMCAP{}
	for i, f := range files {
		r := res[abs[i]]
		// The reference writer indexes the attachment of its unchunked
		// file at a wrong offset, and its indexed reader then refuses the
		// file; the stream reader reads it.
		known := filepath.Base(f) == "unchunked.mcap" && strings.Contains(r.Error, "does not point to attachment record")
		if r.Error != "" && !known {
			t.Errorf("%s: @mcap/core: %s", f, r.Error)
		}
		byFile[f] = r
	}
	return byFile
}

// streamSeqs is each topic's sequence numbers as the reference stream
// reader read them.
func streamSeqs(r nodeMCAP) map[string]string {
	out := map[string]string{}
	for topic, st := range r.Stream.Topics {
		out[topic] = st.Seqs
	}
	return out
}

// TestE2ESequencesSurvive: an MCAP file's sequence numbers (10, 11, 13,
// 14 and 7 on three topics; 0 to 59 on two) come out of export --format
// mcap, export --format jsonl ("sequence"), an import of that, merge
// (to pack and to MCAP) and a pack round trip as they went in (issue 31
// item 7: they came out numbered from 0 per topic).
func TestE2ESequencesSurvive(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"padded-chunked", "chunked-zstd"} {
		in := otherMCAP(name)
		want := streamSeqs(nodeValidate(t, in)[in])
		p := func(s string) string { return filepath.Join(dir, name+s) }
		run := func(args ...string) {
			t.Helper()
			if code, out, errs := runBin(t, args...); code != 0 {
				t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
			}
		}
		run("export", "--format", "mcap", in, "-o", p(".mcap"))
		run("export", "--format", "jsonl", in, "-o", p(".jsonl"))
		run("import", "--format", "jsonl", p(".jsonl"), "-o", p("-imported.pack"))
		run("export", "--format", "mcap", p("-imported.pack"), "-o", p("-imported.mcap"))
		run("merge", in, "-o", p("-merged.pack"))
		run("export", "--format", "mcap", p("-merged.pack"), "-o", p("-merged-pack.mcap"))
		run("merge", in, "-o", p("-merged.mcap"))
		run("export", "--format", "mcap", p(".mcap"), "-o", p("-again.mcap"))
		outs := []string{p(".mcap"), p("-imported.mcap"), p("-merged-pack.mcap"), p("-merged.mcap"), p("-again.mcap")}
		res := nodeValidate(t, outs...)
		for _, o := range outs {
			if got := streamSeqs(res[o]); !maps.Equal(got, want) {
				t.Errorf("%s: sequences %v, want %v", filepath.Base(o), got, want)
			}
		}
		js, err := os.ReadFile(p(".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if name == "padded-chunked" && !strings.Contains(string(js), `{"seq":3,"topic":"/c","ts":1003,"gen_ts":903,"sequence":7,"data":"YzA="}`) {
			t.Errorf("export jsonl:\n%s", js)
		}
	}
}

// otherWriterFiles are the MCAP files of other writers the acceptance test
// reads: the reference TypeScript writer's (mcap/testdata/node/write.mjs:
// chunked or not, zstd, with and without statistics, summary and indexes,
// a schemaless channel, attachments, metadata, a name two metadata records
// share, sequences with gaps) and the hand-built padded ones.
var otherWriterFiles = append([]string{"unchunked", "chunked-none", "chunked-zstd", "no-statistics", "no-summary",
	"unchunked-no-summary", "chunked-extra"}, paddedFiles...)

// content is what a file holds that a conversion must not drop, as the
// reference reader's stream reader sees it: per topic the messages (count,
// bytes, SHA-256 in order, sequences), the attachments (name, media type,
// times, size, SHA-256) and the metadata records other than edr-lite's own
// (edr.*), sorted.
func content(r nodeMCAP) string {
	var b strings.Builder
	var topics []string
	for t := range r.Stream.Topics {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, t := range topics {
		st := r.Stream.Topics[t]
		fmt.Fprintf(&b, "topic %s: %d messages, %d bytes, %s, seqs %s\n", t, st.Messages, st.Bytes, st.Sha256, st.Seqs)
	}
	for _, a := range r.Stream.Attachments {
		fmt.Fprintf(&b, "attachment %q %q log %s create %s: %d bytes, %s\n", a.Name, a.MediaType, a.LogTime, a.CreateTime, a.Size, a.Sha256)
	}
	var mds []string
	for _, md := range r.Stream.Metadata {
		if strings.HasPrefix(md.Name, "edr.") {
			continue
		}
		kv, _ := json.Marshal(md.KV)
		mds = append(mds, fmt.Sprintf("metadata %q %s\n", md.Name, kv))
	}
	slices.Sort(mds)
	b.WriteString(strings.Join(mds, ""))
	return b.String()
}

// TestE2EOtherWritersRoundTrip is issue 31's acceptance for MCAP files from
// other writers: each reads (info, list attachments), verifies, and comes
// out of every conversion with nothing dropped, as the reference reader
// sees the outputs: export --format mcap, merge to pack then export, merge
// to MCAP, export --format jsonl then import then export, compress and
// recover. cat --attachment gives each attachment's bytes back from the
// pack round trip, and an export to a format that holds no attachments
// warns naming them.
func TestE2EOtherWritersRoundTrip(t *testing.T) {
	dir := t.TempDir()
	var ins []string
	for _, name := range otherWriterFiles {
		ins = append(ins, otherMCAP(name))
	}
	orig := nodeValidate(t, ins...)
	var outs []string
	origOf := map[string]string{}
	packs := map[string]string{} // input -> its pack round trip
	for i, name := range otherWriterFiles {
		in := ins[i]
		p := func(s string) string { return filepath.Join(dir, name+s) }
		run := func(args ...string) string {
			t.Helper()
			code, out, errs := runBin(t, args...)
			if code != 0 {
				t.Fatalf("%s: %v: exit %d\n%s%s", name, args, code, out, errs)
			}
			return out + errs
		}
		if out := run("verify", in); !strings.Contains(out, ": ok") {
			t.Errorf("%s: verify: %s", name, out)
		}
		// The reference writer indexes the attachment of its unchunked file
		// at a wrong offset: --strict says so (and nothing else).
		code, out, _ := runBin(t, "verify", "--strict", in)
		if name == "unchunked" {
			if code != 1 || !strings.Contains(out, "AttachmentIndex") {
				t.Errorf("%s: verify --strict: exit %d, %s", name, code, out)
			}
		} else if code != 0 {
			t.Errorf("%s: verify --strict: exit %d, %s", name, code, out)
		}
		nAtt := len(orig[in].Stream.Attachments)
		if out := run("info", in); !strings.Contains(out, fmt.Sprintf("attachments: %d", nAtt)) {
			t.Errorf("%s: info does not show its %d attachments:\n%s", name, nAtt, out)
		}
		if out := run("list", "attachments", in); strings.Count(out, "\n") != nAtt+1 {
			t.Errorf("%s: list attachments:\n%s", name, out)
		}
		run("export", "--format", "mcap", in, "-o", p("-export.mcap"))
		run("merge", in, "-o", p("-merged.pack"))
		run("export", "--format", "mcap", "--compression", "zstd", p("-merged.pack"), "-o", p("-merged-pack.mcap"))
		run("merge", in, "-o", p("-merged.mcap"))
		run("export", "--format", "jsonl", in, "-o", p(".jsonl"))
		run("import", "--format", "jsonl", p(".jsonl"), "-o", p("-imported.pack"))
		run("export", "--format", "mcap", p("-imported.pack"), "-o", p("-imported.mcap"))
		run("compress", in, "-o", p("-compressed.mcap"), "--compression", "lz4")
		run("recover", in, "-o", p("-recovered.mcap"))
		for _, o := range []string{"-export.mcap", "-merged-pack.mcap", "-merged.mcap", "-imported.mcap", "-compressed.mcap", "-recovered.mcap"} {
			outs = append(outs, p(o))
			origOf[p(o)] = in
		}
		packs[in] = p("-imported.pack")
		// An attachment comes back byte for byte from the pack round trip.
		for _, a := range orig[in].Stream.Attachments {
			_, data, errs := runBin(t, "cat", "--attachment", a.Name, p("-imported.pack"))
			sum := sha256.Sum256([]byte(data))
			if hex.EncodeToString(sum[:]) != a.Sha256 {
				t.Errorf("%s: cat --attachment %s: %d bytes differ (%s)", name, a.Name, len(data), errs)
			}
		}
		// Parquet holds no attachments: the export says which it left out.
		_, _, errs := runBin(t, "export", "--format", "parquet", in, "-o", p("-parquet"))
		for _, a := range orig[in].Stream.Attachments {
			if !strings.Contains(errs, "warning: ") || !strings.Contains(errs, strconv.Quote(a.Name)) {
				t.Errorf("%s: export --format parquet does not name attachment %s: %q", name, a.Name, errs)
			}
		}
	}
	got := nodeValidate(t, outs...)
	for _, o := range outs {
		want := content(orig[origOf[o]])
		if g := content(got[o]); g != want {
			t.Errorf("%s differs from %s:\n%s\nwant\n%s", filepath.Base(o), filepath.Base(origOf[o]), g, want)
		}
	}
}
