package mask

import "strings"

// Credential shapes (the well-known prefixes of API keys and tokens that
// agents see: OpenAI and Anthropic keys, GitHub tokens, Slack tokens, AWS
// access key ids, JWTs, and whatever follows `Bearer`). Each must start a
// word (the byte before it is not a letter, digit or `_`) and be long
// enough that an ordinary word with the same prefix ("sk-learn",
// "ghost_town") is left alone.
//
//	sk-…            20+ of [A-Za-z0-9_-] with a digit (sk-ant-…, sk-proj-… too)
//	gh[pousr]_…     20+ of [A-Za-z0-9]
//	github_pat_…    20+ of [A-Za-z0-9_]
//	xox[bpars]-…    10+ of [A-Za-z0-9-]
//	AKIA… / ASIA…   exactly 16 of [A-Z0-9]
//	eyJ….….…        base64url segments (a JWT; two segments if the second is long)
//	Bearer …        8+ of [A-Za-z0-9._~+/=-]: the credential only, "Bearer " stays

// shapeAt returns the span [from, to) of a credential shape that starts at
// i, or to == from when there is none.
func shapeAt(s string, i int) (from, to int) {
	if i > 0 && isWord(s[i-1]) {
		return i, i
	}
	rest := s[i:]
	switch rest[0] {
	case 's':
		if strings.HasPrefix(rest, "sk-") {
			n := run(rest[3:], isKeyByte)
			if n >= 20 && strings.ContainsAny(rest[3:3+n], "0123456789") {
				return i, i + 3 + n
			}
		}
	case 'g':
		if len(rest) > 4 && rest[1] == 'h' && strings.IndexByte("pousr", rest[2]) >= 0 && rest[3] == '_' {
			if n := run(rest[4:], isAlnum); n >= 20 {
				return i, i + 4 + n
			}
		}
		if strings.HasPrefix(rest, "github_pat_") {
			if n := run(rest[11:], isWord); n >= 20 {
				return i, i + 11 + n
			}
		}
	case 'x':
		if len(rest) > 5 && strings.HasPrefix(rest, "xox") && strings.IndexByte("bpars", rest[3]) >= 0 && rest[4] == '-' {
			if n := run(rest[5:], isSlackByte); n >= 10 {
				return i, i + 5 + n
			}
		}
	case 'A':
		if strings.HasPrefix(rest, "AKIA") || strings.HasPrefix(rest, "ASIA") {
			if n := run(rest[4:], isUpperDigit); n == 16 && (len(rest) == 20 || !isWord(rest[20])) {
				return i, i + 20
			}
		}
	case 'e':
		if strings.HasPrefix(rest, "eyJ") {
			if n := jwt(rest); n > 0 {
				return i, i + n
			}
		}
	case 'B', 'b':
		if len(rest) > 6 && strings.EqualFold(rest[:6], "bearer") {
			sp := 6
			for sp < len(rest) && (rest[sp] == ' ' || rest[sp] == '\t') {
				sp++
			}
			if sp > 6 {
				if n := run(rest[sp:], isTokenByte); n >= 8 {
					return i + sp, i + sp + n
				}
			}
		}
	}
	return i, i
}

// jwt returns the length of a JWT at the start of s (which starts with
// "eyJ"), or 0: a header of 10+ base64url bytes, a dot, a payload, and a
// dot and a signature (possibly empty); without the second dot the
// payload must be 16+ bytes (a token cut by a line break).
func jwt(s string) int {
	h := run(s, isB64URL)
	if h < 10 || h >= len(s) || s[h] != '.' {
		return 0
	}
	p := run(s[h+1:], isB64URL)
	end := h + 1 + p
	if end < len(s) && s[end] == '.' && p >= 2 {
		return end + 1 + run(s[end+1:], isB64URL)
	}
	if p >= 16 {
		return end
	}
	return 0
}

// run is the length of the prefix of s whose bytes satisfy ok.
func run(s string, ok func(byte) bool) int {
	n := 0
	for n < len(s) && ok(s[n]) {
		n++
	}
	return n
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isWord(c byte) bool      { return isAlnum(c) || c == '_' }
func isKeyByte(c byte) bool   { return isWord(c) || c == '-' }
func isB64URL(c byte) bool    { return isKeyByte(c) }
func isSlackByte(c byte) bool { return isAlnum(c) || c == '-' }

func isUpperDigit(c byte) bool { return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

func isTokenByte(c byte) bool {
	return isKeyByte(c) || strings.IndexByte(".~+/=", c) >= 0
}
