package daemon

import (
	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/upload"
)

// newUploader builds the upload queue of [upload] (nil when uploads are
// off) and lets it protect queued dumps from rotation.
func (d *Daemon) newUploader(dc *dump.Config) error {
	o, schemas, ok, err := d.cfg.UploadOptions()
	if err != nil || !ok {
		return err
	}
	o.Logger = d.log.With("room", "upload")
	o.FileMode = dc.FileMode // everything beside the dumps follows dump_mode
	if o.FileMode == 0 {
		o.FileMode = dump.DefaultFileMode
	}
	keys := signerKeys(dc.Signer)
	o.Seal = func(path string) *upload.SealInfo { return SealInfo(path, keys) }
	o.BeforeDelete = func(path string) {
		if d.dumper != nil {
			d.dumper.Removing(path, "delete_after_upload")
		}
	}
	var convert upload.ConvertFunc
	if o.Parquet {
		convert = ParquetConverter(o.Vehicle, schemas, o.FileMode, keys)
	}
	if d.uploader, err = upload.New(o, convert); err != nil {
		return err
	}
	dc.Keeper = d.uploader
	return nil
}

// enqueueUpload queues a finalized dump (on the hook goroutine).
func (d *Daemon) enqueueUpload(res dump.Result) {
	if d.uploader == nil || res.Err != nil {
		return
	}
	if err := d.uploader.Enqueue(res.Path); err != nil {
		d.log.Error("dump not queued for upload (a later scan of the dump directory queues it)", "path", res.Path, "err", err)
	}
}
