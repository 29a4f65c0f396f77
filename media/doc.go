// Package media reads and writes camera data beside dump files: folders
// of JPEG images and H.264 / H.265 video in MP4 files, as the Foxglove
// messages foxglove.CompressedImage and foxglove.CompressedVideo.
//
// In one paragraph: OpenJPEGDir lists a folder as frames sorted by time
// (from the file name, EXIF DateTimeOriginal, or a start time and a frame
// interval), with the files it left out and why; ReadFrame gives a
// frame's bytes; JPEGDirWriter writes images back as "<ns>.jpg". OpenMP4
// (or NewMP4Reader over any io.ReaderAt) demuxes one H.264/H.265 track of
// a plain or fragmented MP4: Next fills a reused Sample with the picture
// in Annex B (parameter sets before key frames), its presentation and
// decode times in ns and its key flag, until io.EOF. MP4Writer (CreateMP4,
// NewMP4Writer) remuxes such samples, or samples rebuilt from messages
// (DeriveDTS, KeyFrame), into an MP4 that ffprobe reads back the same.
// AppendCompressedImage / AppendCompressedVideo encode the messages
// (DecodeCompressed* read them back); CompressedImageDescriptor and
// CompressedVideoDescriptor are their protobuf schemas (FileDescriptorSets
// compiled from proto/foxglove/*.proto), SchemaCompressedImage and
// SchemaCompressedVideo their names: those are package media/foxglove's,
// re-exported here. A file cut short is read up to the
// cut with MP4Options.AcceptCut (MP4.Cut says what was lost); CheckJPEG
// tells a whole JPEG from one cut short, and OpenJPEGDir keeps a cut one
// that holds image data (JPEGFrame.Cut). docs/media.md lists what is
// supported, the file-name patterns and the limits.
//
// It is not for: decoding pictures (only headers are read: the JPEG
// header, the SPS), audio (audio tracks are listed and skipped), codecs
// other than H.264 and H.265 in MP4, writing fragmented MP4, or knowing
// about dumps, topics and the command line (the importer and exporter wire
// this package to them).
//
// # Caveats
//
//   - Lifetimes: Sample.Data is reused by the next Next into the same
//     Sample; copy what must live longer. CompressedVideo.Data and
//     CompressedImage.Data alias the decoded message. Frames and Skipped
//     return the JPEGDir's own slices.
//   - Concurrency: MP4 and MP4Writer are not safe for concurrent use; a
//     JPEGDir is (it holds only the listing). JPEGDirWriter is not.
//   - Untrusted input: every size and offset in an MP4 is checked against
//     the bytes that hold it before anything is allocated or read; moov
//     and moof boxes are read whole up to MP4Options.MaxBoxBytes, samples
//     up to MaxSampleBytes; the samples of a file together may claim no
//     more bytes than the file, so the work is bounded by its size. Errors
//     are *BoxError (box path, offset, reason) and sticky in Next.
//   - Times: all times are int64 ns since the UNIX epoch. MP4 times are
//     relative to the movie; MP4Options.StartNs places them (CreationNs
//     says what the file claims). Samples come in decode order: with
//     B-frames their presentation times go back and forth.
//   - Foxglove's viewer does not play B-frames (its CompressedVideo
//     documentation says so); the messages carry them faithfully anyway
//     (dumpfile warns when they are written to MCAP).
//   - A fragmented file cut exactly between two fragments looks whole:
//     nothing in it says more fragments were to come.
//
// # Performance
//
// Next copies each sample once (4-byte NAL lengths become start codes in
// place) and allocates nothing after warm-up (TestMP4NextAllocs);
// BenchmarkMP4Next compares it with pread and copy of the same bytes.
// Figures and the commands that reproduce them are in docs/media.md.
package media
