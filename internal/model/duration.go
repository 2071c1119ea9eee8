package model

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a Go duration of the source ("90s", "1h30m"), decoded once,
// when the source is read into the model: its length, and the text it was
// written as, which artifacts and messages carry as written. The zero
// Duration is one the source leaves unset.
type Duration struct {
	d    time.Duration
	text string
}

// DurationOf is the Duration d written the shortest way
// (FormatDuration): nodegen's own defaults.
func DurationOf(d time.Duration) Duration { return Duration{d: d, text: FormatDuration(d)} }

// Duration is the length of d (0 when unset).
func (d Duration) Duration() time.Duration { return d.d }

// String is d as the source wrote it ("" when unset).
func (d Duration) String() string { return d.text }

// IsZero reports whether d is unset.
func (d Duration) IsZero() bool { return d.text == "" }

// UnmarshalText decodes a Go duration: the one place the model's
// durations are parsed.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration: %v", b, err)
	}
	*d = Duration{d: v, text: string(b)}
	return nil
}

// MarshalText writes d as the source wrote it.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.text), nil }

// UnmarshalJSON decodes a JSON string holding a Go duration.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	return d.UnmarshalText([]byte(s))
}
