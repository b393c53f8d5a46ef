//go:build !linux

package main

import "errors"

func pin(int) error { return errors.New("-pin needs Linux") }
