package facade

// screenSchema is harness_screen's input (DESIGN §12), in the words of
// `harness screen` and `harness wait`. The bounds are control's: the
// scrollback a harness keeps, and a day for idle_s and timeout_s.
const screenSchema = `{"type":"object","properties":{` +
	`"name":{"type":"string","minLength":1,"description":"harness name (project/name for project harnesses)"},` +
	`"scrollback":{"type":"integer","minimum":0,"maximum":1000,"description":"also return up to this many lines that scrolled off the screen, oldest first"},` +
	`"idle_s":{"type":"number","minimum":0,"maximum":86400,"description":"first wait until the harness has been idle (no output) for this many seconds, at least its idle_after"},` +
	`"timeout_s":{"type":"number","minimum":0,"maximum":86400,"description":"with idle_s: give up waiting after this many seconds (default 30) and return the screen as it is, with a note"}` +
	`},"required":["name"],"additionalProperties":false}`

// screenDescription tells a model what harness_screen answers.
const screenDescription = "Show what a running harness's terminal shows now: its rows as text (trailing blanks trimmed), cursor, size, title, whether it is on the alternate screen, and whether it is busy (printing) or idle, with idle_s. With idle_s, wait until it has been quiet that long first (bounded by timeout_s; a note says if it timed out): use it to read a TUI agent's dialog or answer once it has settled. A harness that is not running answers not_running."
