package daemon

import (
	"github.com/prometheus/client_golang/prometheus"

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
	var convert upload.ConvertFunc
	if o.Parquet {
		convert = ParquetConverter(o.Vehicle, schemas)
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

var (
	descUploadQueued = prometheus.NewDesc("edr_upload_queued", "Dumps waiting for upload, by state (queued, uploading, failed).", []string{"state"}, nil)
	descUploadDone   = prometheus.NewDesc("edr_upload_dumps_total", "Dumps the server confirmed since start (uploaded), and queued dumps deleted before their upload (evicted: disk critically low; missing: deleted by someone else).", []string{"outcome"}, nil)
	descUploadBytes  = prometheus.NewDesc("edr_upload_sent_bytes_total", "Bytes sent to the object store, retries included.", nil, nil)
	descUploadError  = prometheus.NewDesc("edr_upload_error", "1 while the last upload attempt failed or the journal cannot be written.", []string{"kind"}, nil)
)

func uploadDescs() []*prometheus.Desc {
	return []*prometheus.Desc{descUploadQueued, descUploadDone, descUploadBytes, descUploadError}
}

func collectUpload(ch chan<- prometheus.Metric, u *upload.Status) {
	if u == nil {
		return
	}
	states := map[string]float64{"queued": 0, "uploading": 0, "failed": 0}
	for _, e := range u.Entries {
		states[e.State]++
	}
	for s, n := range states {
		ch <- prometheus.MustNewConstMetric(descUploadQueued, prometheus.GaugeValue, n, s)
	}
	ch <- prometheus.MustNewConstMetric(descUploadDone, prometheus.CounterValue, float64(u.Uploaded), "uploaded")
	ch <- prometheus.MustNewConstMetric(descUploadDone, prometheus.CounterValue, float64(u.Evicted), "evicted")
	ch <- prometheus.MustNewConstMetric(descUploadDone, prometheus.CounterValue, float64(u.Missing), "missing")
	ch <- prometheus.MustNewConstMetric(descUploadBytes, prometheus.CounterValue, float64(u.SentBytes))
	b := func(x bool) float64 {
		if x {
			return 1
		}
		return 0
	}
	ch <- prometheus.MustNewConstMetric(descUploadError, prometheus.GaugeValue, b(u.Failed > 0), "upload")
	ch <- prometheus.MustNewConstMetric(descUploadError, prometheus.GaugeValue, b(u.JournalError != ""), "journal")
}
