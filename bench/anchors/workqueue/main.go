// Command workqueue measures client-go's rate-limiting workqueue with the same two
// scenarios as pyctrl's bench/workqueue.py and prints one JSON object on stdout.
package main

import (
	"encoding/json"
	"flag"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// Keys are ints i % distinct, exactly as in the Python scenarios.
func newQueue() workqueue.TypedRateLimitingInterface[int] {
	return workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[int]())
}

// singleThread: one goroutine does add; get; done for k = i % distinct.
func singleThread(ops, distinct int) float64 {
	q := newQueue()
	defer q.ShutDown()
	start := time.Now()
	for i := 0; i < ops; i++ {
		k := i % distinct
		q.Add(k)
		item, _ := q.Get()
		q.Done(item)
	}
	return float64(ops) / time.Since(start).Seconds()
}

// producerConsumers: one producer adds items keys, consumers get/done until drained.
// It returns items processed per second and how many were processed (duplicates that were
// still waiting collapse, so that can be fewer than items).
func producerConsumers(items, distinct, consumers int) (float64, int64) {
	q := newQueue()
	var processed int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < consumers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int64
			for {
				item, shutdown := q.Get()
				if shutdown {
					break
				}
				n++
				q.Done(item)
			}
			mu.Lock()
			processed += n
			mu.Unlock()
		}()
	}
	for i := 0; i < items; i++ {
		q.Add(i % distinct)
	}
	q.ShutDownWithDrain()
	wg.Wait()
	return float64(processed) / time.Since(start).Seconds(), processed
}

func main() {
	ops := flag.Int("ops", 1000000, "single-thread operations")
	items := flag.Int("items", 1000000, "items added by the producer")
	distinct := flag.Int("distinct", 10000, "distinct keys")
	consumers := flag.Int("consumers", 4, "consumer goroutines")
	flag.Parse()
	single := singleThread(*ops, *distinct)
	rate, processed := producerConsumers(*items, *distinct, *consumers)
	out := map[string]float64{
		"single_thread_ops_per_s":        single,
		"producer_consumers_items_per_s": rate,
		"producer_consumers_processed":   float64(processed),
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}
