package main

import "testing"

func TestCheckLoopback(t *testing.T) {
	for target, ok := range map[string]bool{
		"http://127.0.0.1:8080":  true,
		"http://127.9.9.9:1":     true,
		"http://[::1]:8080":      true,
		"http://localhost:8080":  true,
		"http://10.0.0.1:8080":   false,
		"http://192.168.1.1":     false,
		"http://example.com":     false,
		"http://8.8.8.8:80":      false,
		"http://[2001:db8::1]:1": false,
	} {
		if err := checkLoopback(target); (err == nil) != ok {
			t.Errorf("%s: err = %v", target, err)
		}
	}
}
