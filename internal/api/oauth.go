package api

// OAuth sign-ins of remote upstreams (docs/design/mcp.md): `harness mcp login KEY`
// and `harness mcp logout KEY`. Operator operations: no facade tool (an
// agent cannot sign its fleet in), and no answer carries a token.
const (
	OpMCPLogin  = "mcp_login"
	OpMCPLogout = "mcp_logout"
)

// MCPLoginArgs are the arguments of `mcp_login`. Without Wait it starts a
// sign-in and answers the URL to open; with Wait it waits for the sign-in
// in progress to end.
type MCPLoginArgs struct {
	// Key is the upstream's KEY, or PROJECT/KEY for a project's.
	Key  string `json:"key"`
	Wait bool   `json:"wait,omitempty"`
}

// MCPLogoutArgs are the arguments of `mcp_logout`.
type MCPLogoutArgs struct {
	Key string `json:"key"`
}

// The states a sign-in answer reports.
const (
	LoginPending   = "pending"    // open URL in a browser
	LoginSignedIn  = "signed_in"  // tokens stored; the upstream reconnects
	LoginSignedOut = "signed_out" // tokens deleted; the upstream needs a login
)

// StateNeedsLogin is the state `mcp_status` shows for an upstream with
// auth = "oauth" and no usable sign-in.
const StateNeedsLogin = "needs_login"

// MCPLoginResult answers `mcp_login` and `mcp_logout`.
type MCPLoginResult struct {
	Key   string `json:"key"`
	State string `json:"state"`
	// URL is the authorization URL to open (pending only).
	URL string `json:"url,omitempty"`
	// Redirect is the loopback URL the browser comes back to (pending).
	Redirect string `json:"redirect,omitempty"`
}
