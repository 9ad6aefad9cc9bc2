package model

import "testing"

func params(t testing.TB) *Params {
	t.Helper()
	p, _, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	return p
}
