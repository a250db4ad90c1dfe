// Package top is `harness top`: a full-screen dashboard of the fleet on
// Charm's bubbletea (v2).
//
// The dashboard is a bubbletea model (Model) that speaks the control
// socket through a Backend (*client.Client in production, a fake in the
// tests): the event subscription says what changed and the model fetches
// just that (`describe` for a unit, `list` when many changed at once or
// on reload, `mcp_status` for upstreams), debounced, so an idle fleet
// costs no work and a state change reaches the screen within the
// debounce plus one round trip. Nothing is re-listed on a timer.
//
// What the model fetches and how it draws are kept apart: fetch.go turns
// operations into messages, data.go keeps the rows, view.go draws them in
// whatever width and height the terminal has (columns shrink or drop,
// lines never wrap), keys.go maps keys to actions and builds the help line
// from the same table, so a key that does nothing is never shown.
//
// The package imports the wire only (internal/api, internal/client,
// internal/errcode for the codes of refusals), never the engine;
// internal/archtest holds it to that.
package top
