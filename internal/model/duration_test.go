package model_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/model"
)

// A Duration keeps the text it was written as: JSON (nodegen export)
// shows it as written, and an unset one is left out under omitzero.
func TestDurationText(t *testing.T) {
	var d model.Duration
	if err := d.UnmarshalText([]byte("90m")); err != nil {
		t.Fatal(err)
	}
	if d.Duration() != 90*time.Minute || d.String() != "90m" || d.IsZero() {
		t.Errorf("90m: %v written %q, zero %v", d.Duration(), d.String(), d.IsZero())
	}
	b, err := json.Marshal(struct {
		D     model.Duration `json:"d"`
		Unset model.Duration `json:"unset,omitzero"`
	}{D: d})
	if err != nil || string(b) != `{"d":"90m"}` {
		t.Errorf("JSON %s, %v; want {\"d\":\"90m\"}", b, err)
	}
	var back struct{ D model.Duration }
	if err := json.Unmarshal([]byte(`{"D":"1h30m"}`), &back); err != nil || back.D.Duration() != 90*time.Minute || back.D.String() != "1h30m" {
		t.Errorf("from JSON: %v written %q, %v", back.D.Duration(), back.D.String(), err)
	}
	for _, bad := range []string{"soon", "9999999999h", ""} {
		if err := d.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q decoded as a duration", bad)
		}
	}
	if got := model.DurationOf(30 * time.Second); got.String() != "30s" || got.Duration() != 30*time.Second {
		t.Errorf("DurationOf(30s) = %v written %q", got.Duration(), got.String())
	}
}
