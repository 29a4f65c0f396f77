package config

// CANSource is a vehicle bus ([[source.can]], docs/can.md): a SocketCAN
// interface, or the CAN buses a capture module sends over Ethernet (ASAM
// CMP or TECMP, read by a raw capture with a kernel filter on EtherType
// 0x99FE). internal/daemon checks and opens it (daemon.Check = run).
type CANSource struct {
	// Interface is the SocketCAN interface ("can0").
	Interface string `toml:"interface"`
	// Ethernet is the Ethernet interface a capture module sends to
	// (instead of Interface); Protocol is "cmp" (ASAM CMP, the default)
	// or "tecmp".
	Ethernet string `toml:"ethernet"`
	// Candump is a candump log read as it is written: a FIFO that
	// "candump -L can0" or a simulation writes into (or a file, read
	// once). Its buses are named by the log.
	Candump     string `toml:"candump"`
	Protocol    string `toml:"protocol"`
	Promiscuous bool   `toml:"promiscuous"`
	// Buses names a capture module's interfaces: "DEVICE-INTERFACE"
	// (decimal, "7-1") = bus name; others are named "DEVICE-INTERFACE".
	Buses map[string]string `toml:"buses"`
	// Name is a SocketCAN bus's name (default: Interface); Topic its
	// frames' topic (default "can/" + the name).
	Name  string `toml:"name"`
	Topic string `toml:"topic"`
	// PerID records each identifier's frames on a topic of its own
	// (can/BUS/0x123) instead of one topic for the bus.
	PerID bool `toml:"per_id"`
	// FD records the frames as CAN FD from the start (else from the first
	// CAN FD frame on).
	FD bool `toml:"fd"`
	// DBC decodes the frames it knows into one topic per message,
	// relative to the configuration file.
	DBC string `toml:"dbc"`
	// Filters are SocketCAN kernel ID filters: "0x123", "0x100/0x700",
	// "0x18FEF100x" (29-bit).
	Filters []string `toml:"filters"`
	// Channel is the channel of every topic of the source ("" = none).
	Channel string `toml:"channel"`
}
