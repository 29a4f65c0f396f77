// Package upload sends finalized dumps to S3-compatible object storage
// through a durable queue, for fleets: every dump reaches the bucket over a
// bad link, once, byte for byte, and a dump is never deleted locally before
// the server confirmed it.
//
// In one paragraph: an Uploader (New, Start, Stop) owns the queue of one
// dump directory. Enqueue adds a finalized dump (the recorder's dump hook
// calls it); Start and a periodic scan add the dumps it missed. One
// goroutine uploads the oldest runnable dump: a HEAD first (already there:
// done), then one PUT, or a multipart upload above Options.PartSize, each
// request carrying the CRC32C of its bytes and the whole object's CRC32C
// (checksum type FULL_OBJECT), which the server checks; then a HEAD that
// must report the local size and CRC32C: only then the dump leaves the
// queue, is written to the ledger and, with DeleteAfterUpload, deleted.
// Every failure has a kind (KindOf): errors of the server or the link
// (ErrCredentials, ErrNoBucket, ErrTLS, ErrUnreachable, ErrServer) pause
// the whole queue, once, with exponential back-off and jitter, after which
// its oldest dump is tried alone; errors of one dump (ErrFile, or the
// object's) retry that dump on its own back-off. A HEAD's bodiless 404 is
// told from a missing bucket by one HeadBucket. A multipart upload cut by a
// failure or a crash resumes from the parts the server lists (the journal
// keeps its id; a lost id is found by listing the key's uploads). The
// bytes sent pass a token bucket (Options.Bandwidth); uploads run only in
// the schedule window (Options.Window). The Uploader is the dump
// pipeline's dump.Keeper: rotation spares queued dumps, deleting them
// only to make a new dump's room (min_free_disk), and Evicted hears when
// it did (counted by reason; an upload of it in flight is cut). Status reports the
// queue (queued, uploading, failed with the last error, uploaded, evicted,
// the journal's health); ReadState reads a directory's queue files without
// a running recorder (ls). OneOff is the same upload, once, for the upload
// verb. Converting a dump to Parquet is the caller's ConvertFunc.
//
// The journal (JournalName, the pending queue) is a small JSON file
// rewritten whole through NAME.tmp, fsync, rename and a directory fsync,
// so it is always the old or the new state; the ledger (LedgerName) is
// appended a line per confirmed dump and fsynced. Neither is the truth
// about the bucket: a lost or unreadable journal (a ledger holding
// garbage, an unreadable one) is set aside as NAME.bad.N, never over an
// earlier one, counted in Status.SetAsideFiles, and the queue rebuilt from
// the directory, whose dumps the HEAD of each upload
// sorts into "already there" and "to send". Both files are read bounded by
// MaxJournalSize.
//
// It is not for: Parquet itself (package table, through dumpfile),
// downloading, listing or deleting objects, or any server but one
// speaking the S3 API with CRC32C checksums (AWS S3, MinIO, Ceph RGW,
// versitygw).
//
// # Caveats
//
//   - One upload at a time, parts in order: the queue is built for one
//     slow link, not to saturate a fast one.
//   - The journal and the ledger hold file names, not paths: the queue
//     belongs to its directory. Moving dumps between directories by hand
//     queues them again (a HEAD finds them already uploaded).
//   - A dump is read twice: once to compute its CRC32Cs (after the first
//     HEAD answered; kept for the retries of the same upload), once to
//     send it.
//   - Status.SentBytes counts every byte handed to the link, resends
//     included (it only grows); UploadedBytes the confirmed dumps' sizes.
//   - The schedule window is in the machine's local time (TZ); a part in
//     flight when it closes finishes, the next waits.
//   - When the journal cannot be written (a full disk) the queue goes on in
//     memory and says so in Status.JournalError and the log; a restart
//     rebuilds it from the directory.
//   - Methods of Uploader and OneOff are safe for concurrent use; Options
//     must not change after New.
package upload
