// Package dumpinfo is what makes a dump self-describing, whatever its file
// format: the triggers that caused it (Trigger, the one trigger record every
// room shares) and each topic's accounting for the window (TopicAccount),
// with the constants for trigger sources and dump labels. Package pack
// stores an Info as a metadata section, package mcap as metadata records.
//
// It is a leaf: plain data with JSON tags, no I/O, importing nothing of
// edr-lite.
//
// It is not for: how the recorder fills it (package dump) or how a file
// stores it (packages pack and mcap).
//
// # Caveats
//
// The JSON field names are part of the file formats (pack/FORMAT.md);
// renaming one breaks older readers.
package dumpinfo
