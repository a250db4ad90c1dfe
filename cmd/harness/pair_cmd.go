package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/skip2/go-qrcode"
	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// pairCmd is `harness pair`: a single-use URL (and its QR code) that signs
// a phone in to the listener for people (docs/design/web.md).
func pairCmd(g *globals) *cobra.Command {
	var name string
	var grant []string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "pair",
		Short: "Pair a phone or browser with the listener for people: a single-use URL and its QR code",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ttl < api.MinPairTTL || ttl > api.MaxPairTTL {
				return errcode.Errorf(errcode.InvalidArgument, "pair: --ttl %s is out of range: want %s to %s", ttl, api.MinPairTTL, api.MaxPairTTL)
			}
			var res api.PairResult
			args := api.PairArgs{Name: name, Grant: splitClasses(grant), TTLS: int(ttl / time.Second)}
			if err := g.call(cmd.Context(), api.OpPair, args, &res); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if g.json {
				return emit(w, res)
			}
			fmt.Fprintf(w, "Open on the device (once, before %s):\n\n  %s\n\n", res.Expires.Local().Format("15:04:05"), res.URL)
			if err := writeQR(w, res.URL); err != nil {
				return err
			}
			fmt.Fprintf(w, "\ndevice %s, grant %s\n", res.Name, strings.Join(res.Grant, ","))
			if res.Fingerprint != "" {
				fmt.Fprintf(w, "certificate SHA-256 (check it before you accept the warning):\n  %s\n", res.Fingerprint)
			}
			fmt.Fprintf(w, "end it with: harness devices revoke %s\n", res.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the device's name (default device-N)")
	cmd.Flags().StringSliceVar(&grant, "grant", nil, "what the device may do: read, write, input (default read,input)")
	cmd.Flags().DurationVar(&ttl, "ttl", api.DefaultPairTTL, "how long the URL may be used")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpPair)
}

// writeQR draws url as a QR code with half blocks, two modules a line,
// quiet zone included. Light modules are drawn in the foreground colour,
// dark ones left as the background: right on a dark terminal, inverted on
// a light one, which phones' cameras read as well.
func writeQR(w io.Writer, url string) error {
	q, err := qrcode.New(url, qrcode.Medium)
	if err != nil {
		return fmt.Errorf("pair: QR code: %w", err)
	}
	bits := q.Bitmap() // true is dark; it has a quiet zone of its own
	var b strings.Builder
	for y := 0; y < len(bits); y += 2 {
		for x := range bits[y] {
			top := bits[y][x]
			bottom := y+1 < len(bits) && bits[y+1][x]
			switch {
			case top && bottom:
				b.WriteRune(' ')
			case top:
				b.WriteRune('▄')
			case bottom:
				b.WriteRune('▀')
			default:
				b.WriteRune('█')
			}
		}
		b.WriteByte('\n')
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// devicesCmd is `harness devices`: the paired devices, and revoke.
func devicesCmd(g *globals) *cobra.Command {
	cmd := listVerb(g, listing[api.DeviceInfo]{
		use: "devices", short: "List the devices paired with the listener for people",
		op: api.OpDevices, header: "NAME\tGRANT\tCREATED\tLAST SEEN\tFROM",
		row: func(d api.DeviceInfo) []string {
			seen := "-"
			if d.LastSeen != nil {
				seen = d.LastSeen.Local().Format(time.DateTime)
			}
			return []string{d.Name, strings.Join(d.Grant, ","), d.Created.Local().Format(time.DateTime), seen, orDash(d.LastAddr)}
		},
	}, nil)
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "End a paired device now: its next request is refused and its open pages close",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var res api.DeviceInfo
			if err := g.call(cmd.Context(), api.OpDevicesRevoke, api.DeviceArg{Name: args[0]}, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked device %s\n", res.Name)
			return nil
		},
	}
	addJSON(revoke, g)
	cmd.AddCommand(callsOps(revoke, api.OpDevicesRevoke))
	return cmd
}
