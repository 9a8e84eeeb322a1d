// Command workload is the container the real node's test pods run
// (test/e2e/node): it prints who and where it is, sleeps, and exits with the code
// it is given, so that a test can tell a pod that ran from one that never started.
//
//	workload -sleep 5s -exit 0
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"
)

func main() {
	sleep := flag.Duration("sleep", 0, "How long to run before exiting.")
	code := flag.Int("exit", 0, "The exit code.")
	flag.Parse()
	host, _ := os.Hostname()
	fmt.Printf("workload: uid=%d gid=%d host=%s\n", os.Getuid(), os.Getgid(), host)
	env := os.Environ()
	sort.Strings(env)
	for _, kv := range env {
		if strings.HasPrefix(kv, "KUBENEXUS_") || strings.HasPrefix(kv, "POD_") {
			fmt.Println("workload: env", kv)
		}
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-time.After(*sleep):
	case s := <-stop:
		fmt.Println("workload: stopped by", s)
	}
	fmt.Printf("workload: exiting with %d\n", *code)
	os.Exit(*code)
}
