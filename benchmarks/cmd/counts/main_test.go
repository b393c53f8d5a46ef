package main

import (
	"slices"
	"testing"
)

func TestTotals(t *testing.T) {
	summary := `==27219== I   refs:      981,356,402
==27219== I1  misses:    7,655,321
==27219== LLi misses:       11,670
==27219== D1  misses:    5,658,346  ( 4,857,892 rd   +   800,454 wr)
`
	got, err := totals(summary)
	if err != nil || !slices.Equal(got, []int64{981356402, 7655321, 5658346}) {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := totals("==1== I   refs: 5\n"); err == nil {
		t.Fatal("a summary without misses was read")
	}
}
