package util

import "time"

const (
	// Timeout and Interval are the defaults for Eventually in integration suites.
	Timeout  = 30 * time.Second
	Interval = 100 * time.Millisecond
)
