//go:build ecu && http

// The ECU build with the HTTP stack (go build -tags ecu,http, docs/ecu.md)
// serves /metrics and /status but not the report pages (report.go).

package daemon

import "net/http"

// reportRoutes answers the report pages' paths with what build has them.
func (d *Daemon) reportRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", notInBuild)
	mux.HandleFunc("GET /dumps/", notInBuild)
}

func notInBuild(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "the report pages are not in this build of edr-lite (the ECU build): the full build has them (docs/ecu.md); /metrics and /status are here",
		http.StatusNotFound)
}
