package config

import (
	"slices"

	"github.com/edr-lite/edr-lite/internal/defaults"
)

// Live is the [live] section: the Foxglove WebSocket server of package live
// (docs/live.md). Off while Listen is "". internal/daemon.Check validates
// it.
type Live struct {
	// Listen is HOST:PORT ("" = off; no host = loopback).
	Listen string `toml:"listen"`
	// Token is required from clients when set (?token= or a bearer
	// token); Check requires one on an address beyond loopback.
	Token string `toml:"token"`
	// Origins are web origins (host patterns) whose pages may connect.
	Origins          []string `toml:"origins"`
	MaxClients       int      `toml:"max_clients"`
	MaxSubscriptions int      `toml:"max_subscriptions"`
	MaxClientMessage Size     `toml:"max_client_message"`
	Queue            Size     `toml:"queue"`
	StallTimeout     Duration `toml:"stall_timeout"`
	History          Duration `toml:"history"`
	// ClientPublish lets clients publish on PublishTopics (globs); a
	// message on one of TriggerTopics triggers a dump.
	ClientPublish bool     `toml:"client_publish"`
	PublishTopics []string `toml:"publish_topics"`
	TriggerTopics []string `toml:"trigger_topics"`
}

// liveDefaults are the [live] defaults (internal/defaults).
func liveDefaults() Live {
	return Live{Origins: slices.Clone(defaults.LiveOrigins), MaxClients: defaults.LiveMaxClients,
		MaxSubscriptions: defaults.LiveMaxSubscriptions, MaxClientMessage: defaults.LiveMaxClientMessage,
		Queue: defaults.LiveQueue, StallTimeout: Duration(defaults.LiveStallTimeout), History: Duration(defaults.LiveHistory),
		PublishTopics: []string{defaults.LivePublishTopics}, TriggerTopics: []string{}}
}
