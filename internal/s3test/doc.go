// Package s3test starts a real S3-compatible server for tests: versitygw
// (Apache-2.0, github.com/versity/versitygw) with its POSIX backend over a
// temporary directory, on 127.0.0.1 with throwaway credentials. Tests stop
// it (SIGKILL, as a crash or a pulled cable would) and restart it on the
// same address and directory to play a bad link, or pause it (SIGSTOP) to
// play a stalled one; StartTLS serves HTTPS with a self-signed
// certificate (a client that does not trust it fails the handshake); they
// read objects back through the AWS SDK.
//
// It is not for: production code, or mocking S3 (nothing here fakes a
// reply).
//
// # Caveats
//
// versitygw is found on PATH, in GOBIN, GOPATH/bin or ~/go/bin (.ci/run
// installs Version there), else built with "go install"; a test skips,
// saying why, only when none can be had. The POSIX backend keeps metadata
// in extended attributes: the temporary directory must be on a file
// system with user xattrs (ext4, xfs, btrfs, tmpfs since Linux 6.6). A
// Server is safe for concurrent use; its Logs are the server's output.
package s3test
