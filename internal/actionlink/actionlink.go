// Package actionlink keeps the action links of notifications
// (docs/design/events.md): one link per choice of a waiting prompt, each
// an unguessable id that answers that prompt with that choice, once,
// until it expires. The link alone is the permission, so it is bound to
// one prompt instance (harness, run and prompt id), and the first link of
// a prompt that is used ends every other link of the same prompt.
//
// Links live in memory: a daemon restart forgets them, and a forgotten
// link is unknown. The store keeps each id's SHA-256, never the id.
package actionlink

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"slices"
	"sync"
	"time"
)

// Errors of Look and Claim.
var (
	// ErrUnknown: no such link (never made, forgotten long after it
	// expired, or made by a daemon before a restart).
	ErrUnknown = errors.New("no such link")
	// ErrUsed: this link, or another of the same prompt, was used.
	ErrUsed = errors.New("this prompt was answered through one of its links already")
	// ErrExpired: the link's time is over.
	ErrExpired = errors.New("this link has expired")
)

// DefaultTTL is how long a link stays usable unless configured.
const DefaultTTL = 15 * time.Minute

// Bounds: links are kept (as used or expired, to answer so) for
// keepAfter past their expiry, and at most maxLinks at once, the
// soonest to expire giving way first.
const (
	keepAfter = time.Hour
	maxLinks  = 4096
)

// idBytes is the randomness of an id: 192 bits.
const idBytes = 24

// Prompt is one waiting prompt instance: which harness, which run, and
// the prompt's id (api.AgentView.PromptID).
type Prompt struct {
	Harness  string
	RunID    uint64
	PromptID uint64
}

// Link is what one link does: answer Prompt with Choice (Number, from 1).
type Link struct {
	Prompt
	// Agent and Text say what the prompt is, as the notification said it
	// (masked).
	Agent   string
	Text    string
	Choice  string
	Number  int
	Expires time.Time
}

type key [sha256.Size]byte

type entry struct {
	link  Link
	group *group
}

// group is the state shared by the links of one prompt.
type group struct {
	used    bool
	claimBy key // the link whose claim used it
	links   int
}

// Store holds the links. It is safe for concurrent use.
type Store struct {
	now func() time.Time

	mu     sync.Mutex
	links  map[key]*entry
	groups map[Prompt]*group
	// nextSweep is when the expired links are looked for again.
	nextSweep time.Time
}

// New returns an empty store on the clock now (time.Now when nil).
func New(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{now: now, links: map[key]*entry{}, groups: map[Prompt]*group{}}
}

func hash(id string) key { return sha256.Sum256([]byte(id)) }

// Mint makes one link per choice of p, in order, each good for ttl
// (DefaultTTL when 0), and returns their ids (URL-safe). Links of a prompt
// already answered through a link are born used.
func (s *Store) Mint(p Prompt, agent, text string, choices []string, ttl time.Duration) ([]string, error) {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	ids := make([]string, len(choices))
	for i := range ids {
		b := make([]byte, idBytes)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		ids[i] = base64.RawURLEncoding.EncodeToString(b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.pruneLocked(now, len(ids))
	g := s.groups[p]
	if g == nil {
		g = &group{}
		s.groups[p] = g
	}
	for i, c := range choices {
		s.links[hash(ids[i])] = &entry{group: g, link: Link{Prompt: p, Agent: agent, Text: text, Choice: c, Number: i + 1, Expires: now.Add(ttl)}}
		g.links++
	}
	return ids, nil
}

// Look says what link id does, changing nothing: its Link, and ErrUsed or
// ErrExpired (with the Link) when it can no longer be used, ErrUnknown
// (and no Link) when there is no such link.
func (s *Store) Look(id string) (Link, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.links[hash(id)]
	if !ok {
		return Link{}, ErrUnknown
	}
	return e.link, s.usableLocked(e)
}

// Claim takes link id for its one use: it and every other link of its
// prompt are used from now on. It fails as Look does when the link cannot
// be used. A claim whose answer typed nothing may be given back (Release).
func (s *Store) Claim(id string) (Link, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := hash(id)
	e, ok := s.links[k]
	if !ok {
		return Link{}, ErrUnknown
	}
	if err := s.usableLocked(e); err != nil {
		return e.link, err
	}
	e.group.used, e.group.claimBy = true, k
	return e.link, nil
}

// Release gives back the claim of link id, when the answer it was for
// typed nothing and may be tried again (the dialog was not ready).
func (s *Store) Release(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := hash(id)
	if e, ok := s.links[k]; ok && e.group.used && e.group.claimBy == k {
		e.group.used = false
	}
}

func (s *Store) usableLocked(e *entry) error {
	if e.group.used {
		return ErrUsed
	}
	if !s.now().Before(e.link.Expires) {
		return ErrExpired
	}
	return nil
}

// pruneLocked forgets the links expired more than keepAfter ago (looked
// for at most once a minute), and the
// soonest to expire while there would be more than maxLinks with room
// more.
func (s *Store) pruneLocked(now time.Time, room int) {
	if !now.Before(s.nextSweep) {
		s.nextSweep = now.Add(time.Minute)
		for k, e := range s.links {
			if now.Sub(e.link.Expires) > keepAfter {
				s.dropLocked(k, e)
			}
		}
	}
	over := len(s.links) + room - maxLinks
	if over <= 0 {
		return
	}
	type aged struct {
		k key
		e *entry
	}
	all := make([]aged, 0, len(s.links))
	for k, e := range s.links {
		all = append(all, aged{k, e})
	}
	slices.SortFunc(all, func(a, b aged) int { return a.e.link.Expires.Compare(b.e.link.Expires) })
	for _, a := range all[:min(over, len(all))] {
		s.dropLocked(a.k, a.e)
	}
}

func (s *Store) dropLocked(k key, e *entry) {
	delete(s.links, k)
	if e.group.links--; e.group.links <= 0 {
		delete(s.groups, e.link.Prompt)
	}
}

// Len is how many links the store holds (tests, stats).
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.links)
}
