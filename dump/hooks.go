package dump

// Hook is told about every dump's outcome (upload, archive, notify):
// written, and also failed, refused for low disk or abandoned at stop
// (Result.Status, Result.Err). It is called on the Dumper's hook
// goroutine, one result at a time; a slow hook delays only later hook
// calls, never recording or the next dump.
type Hook interface {
	DumpFinished(res Result)
}

// HookFunc adapts a function to Hook.
type HookFunc func(Result)

// DumpFinished calls f.
func (f HookFunc) DumpFinished(res Result) { f(res) }

func (d *Dumper) runHooks() {
	defer close(d.hookDone)
	for res := range d.hookq {
		for _, h := range d.cfg.Hooks {
			h.DumpFinished(res)
		}
	}
}
