package api

import "time"

// Devices paired with the listener for people (docs/design/web.md):
// `harness pair` makes a single-use code, opening its URL signs that
// device in for good with the code's grant; `harness devices` lists them
// and `harness devices revoke NAME` ends one at once.
const (
	OpPair          = "pair"
	OpDevices       = "devices"
	OpDevicesRevoke = "devices_revoke"
)

// Bounds of a pairing code's lifetime (pair's ttl_s).
const (
	DefaultPairTTL = 10 * time.Minute
	MinPairTTL     = 30 * time.Second
	MaxPairTTL     = 24 * time.Hour
)

// PairArgs are the arguments of pair: the device's name ("" picks one),
// its grant (CLASS entries; empty means read,input) and how long the code
// may be used (ttl_s seconds; 0 means DefaultPairTTL).
type PairArgs struct {
	Name  string   `json:"name"`
	Grant []string `json:"grant"`
	TTLS  int      `json:"ttl_s"`
}

// PairResult is the answer of pair: the URL to open on the device (built
// on [web] public_url when set), the code in it, and the SHA-256
// fingerprint of the listener's certificate ("" without TLS).
type PairResult struct {
	URL         string    `json:"url"`
	Code        string    `json:"code"`
	Name        string    `json:"name"`
	Grant       []string  `json:"grant"`
	Expires     time.Time `json:"expires"`
	Fingerprint string    `json:"fingerprint"`
}

// DeviceInfo is one row of devices: never its secret, nor its hash.
type DeviceInfo struct {
	Name     string     `json:"name"`
	Grant    []string   `json:"grant"`
	Created  time.Time  `json:"created"`
	LastSeen *time.Time `json:"last_seen"`
	LastAddr string     `json:"last_addr"`
}

// DeviceArg names a paired device.
type DeviceArg struct {
	Name string `json:"name"`
}
