// Command redisimage builds the Redis container image ratelab's container
// tests (and `--redis container --redis-image ratelab/redis:local`) use on
// machines with Docker but no registry: FROM scratch, out of the host's
// redis-server (see engine.BuildLocalImage). `make redis-image` runs it.
//
// Usage: go run ./harness/engine/redisimage [-tag ratelab/redis:local] [-if-docker]
//
// It prints the image's tag on stdout when it built one. With -if-docker,
// a missing Docker engine is not an error: it says so on stderr, prints
// nothing on stdout and exits 0 (the container tests then skip).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ratelab/ratelab/harness/engine"
)

func main() {
	tag := flag.String("tag", engine.LocalImage, "the image's name:tag")
	ifDocker := flag.Bool("if-docker", false, "exit 0 without building when no Docker engine answers")
	verbose := flag.Bool("v", false, "print the build log on stderr")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := engine.DockerHealthy(ctx, 5*time.Second); err != nil {
		if *ifDocker {
			fmt.Fprintf(os.Stderr, "redisimage: no Docker engine (%v): not building %s; the container tests will be skipped\n", err, *tag)
			return
		}
		fmt.Fprintf(os.Stderr, "redisimage: %v\n", err)
		os.Exit(1)
	}
	start := time.Now()
	var log *os.File
	if *verbose {
		log = os.Stderr
	}
	var err error
	if log != nil {
		err = engine.BuildLocalImage(ctx, *tag, log)
	} else {
		err = engine.BuildLocalImage(ctx, *tag, nil)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "redisimage: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "redisimage: built %s from the local redis-server in %.1fs\n", *tag, time.Since(start).Seconds())
	fmt.Println(*tag)
}
