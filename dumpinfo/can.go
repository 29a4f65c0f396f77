package dumpinfo

// CANAccount is a CAN frame topic's accounting by a DBC
// (TopicAccount.CAN; docs/can.md, "Accounting"): of the frames the topic
// holds in the dump, those the DBC decodes and those it does not, with
// the first few IDs of each kind ("7FF", "18FEF100x" for a 29-bit one).
// Remote requests and error frames carry no signals and are in none.
type CANAccount struct {
	DBC        string   `json:"dbc"` // the DBC file's base name
	Decoded    uint64   `json:"decoded"`
	Unknown    uint64   `json:"unknown"` // of IDs the DBC lacks
	Short      uint64   `json:"short"`   // shorter than their message
	UnknownIDs []string `json:"unknown_ids,omitempty"`
	ShortIDs   []string `json:"short_ids,omitempty"`
}
