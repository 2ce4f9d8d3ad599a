// Command jobcreate is the limit anchor of `python -m bench cronjob-skew`: how fast this API
// server accepts the tick's Jobs when nothing but creating them runs on the client side.
//
// It reads one batch/v1 Job (JSON, the Job pyctrl's controller builds for the CronJob
// cj-00000 at the tick) and creates --count copies of it named cj-NNNNN-<minute>, each owned
// by the (possibly absent) CronJob cj-NNNNN, from --workers goroutines over one client-go
// clientset (protobuf by default, like kube-controller-manager; no client-side rate limit).
// The goroutines wait until --start (unix seconds, the phase's "tick"), then take indexes
// from a shared counter until all are created. Throttling (429) and server errors are retried
// after a short pause; a conflict (AlreadyExists) counts as created.
//
// It prints one JSON object: per-Job latency from --start to the create's response (a
// client-side view; the bench measures the skew itself from its own watch), throughput, the
// retries and failures, and this process's CPU seconds and peak RSS.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const maxAttempts = 20

// percentile is the nearest-rank percentile (q in 0..100) of an ascending slice, as
// bench/cronjob_skew_probe.percentile computes it.
func percentile(sorted []float64, q float64) float64 {
	rank := int(math.Ceil(q / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig path")
	namespace := flag.String("namespace", "", "namespace to create the Jobs in")
	template := flag.String("template", "", "JSON file with the Job to copy")
	count := flag.Int("count", 2000, "Jobs to create")
	workers := flag.Int("workers", 50, "goroutines creating Jobs")
	start := flag.Float64("start", 0, "unix time to start at (0: now)")
	minute := flag.Int64("minute", 0, "name suffix: the tick in unix minutes")
	contentType := flag.String("content-type", "application/vnd.kubernetes.protobuf",
		"request content type (application/json or application/vnd.kubernetes.protobuf)")
	flag.Parse()

	fail := func(err error) {
		_ = json.NewEncoder(os.Stdout).Encode(map[string]string{"error": err.Error()})
		os.Exit(1)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail(err)
	}
	cfg.QPS = -1 // no client-side rate limiter: the server sets the pace
	cfg.ContentType = *contentType
	cfg.UserAgent = "pyctrl-bench-jobcreate"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fail(err)
	}
	raw, err := os.ReadFile(*template)
	if err != nil {
		fail(err)
	}
	var base batchv1.Job
	if err := json.Unmarshal(raw, &base); err != nil {
		fail(fmt.Errorf("template: %w", err))
	}
	if len(base.OwnerReferences) != 1 {
		fail(fmt.Errorf("template: want exactly one ownerReference"))
	}
	jobs := client.BatchV1().Jobs(*namespace)
	ctx := context.Background()
	// One request before the clock starts: TLS handshake and HTTP/2 connection set up, as
	// they are for a controller that has been running.
	if _, err := jobs.List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		fail(err)
	}

	startAt := time.Now()
	if *start > 0 {
		sec, frac := math.Modf(*start)
		startAt = time.Unix(int64(sec), int64(frac*1e9))
		time.Sleep(time.Until(startAt))
	}
	latencies := make([]float64, *count)
	var next, retries, failures atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= *count {
					return
				}
				job := base.DeepCopy()
				owner := fmt.Sprintf("cj-%05d", i)
				job.Name = fmt.Sprintf("%s-%d", owner, *minute)
				job.Namespace = *namespace
				job.OwnerReferences[0].Name = owner
				job.OwnerReferences[0].UID = types.UID(fmt.Sprintf(
					"00000000-0000-4000-8000-%012d", i))
				for attempt := 1; ; attempt++ {
					_, err := jobs.Create(ctx, job, metav1.CreateOptions{})
					if err == nil || apierrors.IsAlreadyExists(err) {
						latencies[i] = time.Since(startAt).Seconds()
						break
					}
					if attempt == maxAttempts || !(apierrors.IsTooManyRequests(err) ||
						apierrors.IsServerTimeout(err) || apierrors.IsInternalError(err) ||
						apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err)) {
						failures.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
						latencies[i] = -1
						break
					}
					retries.Add(1)
					time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(startAt).Seconds()

	done := make([]float64, 0, len(latencies))
	for _, v := range latencies {
		if v >= 0 {
			done = append(done, v)
		}
	}
	sort.Float64s(done)
	out := map[string]any{
		"count": len(done), "failures": failures.Load(), "retries": retries.Load(),
		"workers": *workers, "content_type": *contentType,
		"elapsed_s":  round3(elapsed),
		"jobs_per_s": math.Round(float64(len(done)) / elapsed),
	}
	if len(done) > 0 {
		out["response"] = map[string]float64{
			"min": round3(done[0]), "p50": round3(percentile(done, 50)),
			"p90": round3(percentile(done, 90)), "p99": round3(percentile(done, 99)),
			"max": round3(done[len(done)-1]),
		}
	}
	if e := firstErr.Load(); e != nil {
		out["first_error"] = e
	}
	var usage syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &usage) == nil {
		cpu := time.Duration(usage.Utime.Nano() + usage.Stime.Nano()).Seconds()
		out["cpu_seconds"] = round3(cpu)
		out["peak_rss_mib"] = math.Round(float64(usage.Maxrss)/1024*10) / 10 // KiB on Linux
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}
