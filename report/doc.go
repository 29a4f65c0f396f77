// Package report turns dumps, or the live recorder's recent window, into
// what an engineer looks at first after an incident: one self-contained
// HTML page (WriteHTML) with the triggers, a topic timeline, signal plots,
// a camera strip, timing analysis, the accounting and the file facts, or
// the same analysis as a JSON document (Report's fields). docs/report.md
// describes every section and how it is computed.
//
// In one paragraph: an Analyzer is given a time range and the triggers,
// then topics (TopicSpec: name, type, schema if known, the dump's
// accounting) and their messages (capture time, producer time, payload),
// each topic's in capture order; Report finishes it. FromDumps (and
// FromSources) feed it from dump files through dumpfile, several
// merged in time order, with a topic's schema from the dump itself when it
// records one (DumpTopicType) or from Options.Schemas (ParseSchemaArg: a
// packed-struct layout file, or a Foxglove camera type). Plots are SVG
// written here (chart.go): a lane per topic, a plot per numeric field, one
// time axis for all; long signals are reduced to the first, smallest,
// largest and last sample of each pixel column, so spikes survive and a
// plot has at most 4 points per column. Thumbnails are JPEG and PNG
// frames decoded with the standard library and downscaled with a box
// filter (Downscale); video key frames are decoded with ffmpeg when it is
// installed (FindVideoDecoder), else shown as a placeholder saying why.
//
// It is not for: reading rings or serving HTTP (internal/daemon feeds an
// Analyzer from the recorder and serves the pages), decoding message
// bytes (package schema) or camera containers (package media), or flags
// (cmd/edr-lite).
//
// # Caveats
//
//   - Memory is bounded by the options, not by the input: per topic the
//     timeline bins, two histograms (ExactValues values, then 8 KiB
//     blocks), MaxGaps gaps; per plotted field 2×Columns samples or
//     Columns columns; MaxSignals fields, MaxCameras camera topics, camera
//     frames up to MaxFrameBytes each and MaxRetainedFrameBytes together,
//     pictures up to MaxPicturePixels. What is left out is said in
//     Report.Notes.
//   - Quantiles are exact up to ExactValues values per topic, then within
//     0.1% (Hist).
//   - The page's only script is inline: uPlot (report/uplot, vendored from
//     its npm package) and chart.js, which replace the SVG plots by
//     zoomable charts on one axis with one cursor; without script the
//     SVG plots stay. A live page reloads itself with a meta refresh
//     (HTMLOptions.RefreshS).
//   - An Analyzer is not safe for concurrent use; a Report is plain data.
//     Frame.Thumb is left out of the JSON (ThumbBytes says its size).
package report
