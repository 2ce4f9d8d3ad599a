// Command informer is the client-go anchor for `python -m bench informer`: a
// SharedInformerFactory ConfigMap informer (protobuf content type) timed to sync, its RSS
// growth per cached object, and the watch events per second it consumes when started from a
// resourceVersion before a round of updates. It prints one JSON object.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func rssBytes() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func settledRSS() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	return rssBytes()
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig path")
	namespace := flag.String("namespace", "", "namespace holding the ConfigMaps")
	objects := flag.Int("objects", 10000, "expected ConfigMaps")
	rvBefore := flag.String("rv-before", "", "resourceVersion before the update round")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		panic(err)
	}
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.QPS, cfg.Burst = 1000, 1000
	client := kubernetes.NewForConfigOrDie(cfg)
	out := map[string]any{}

	// Phase 1: sync time and memory.
	baseline := settledRSS()
	stop := make(chan struct{})
	start := time.Now()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(*namespace))
	inf := factory.Core().V1().ConfigMaps().Informer()
	factory.Start(stop)
	for !inf.HasSynced() {
		time.Sleep(time.Millisecond)
	}
	out["sync_seconds"] = time.Since(start).Seconds()
	n := len(inf.GetStore().ListKeys())
	after := settledRSS()
	out["objects"] = n
	out["rss_growth_bytes"] = after - baseline
	out["bytes_per_object"] = float64(after-baseline) / float64(max(n, 1))
	close(stop)
	factory.Shutdown()

	// Phase 2: events per second from the version before the update round.
	if *rvBefore != "" {
		ctx := context.Background()
		snapshot, err := client.CoreV1().ConfigMaps(*namespace).List(ctx, metav1.ListOptions{
			ResourceVersion: *rvBefore, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if err != nil {
			panic(err)
		}
		var watchStart atomic.Int64
		lw := &cache.ListWatch{
			ListFunc: func(o metav1.ListOptions) (k8sruntime.Object, error) { return snapshot, nil },
			WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
				if o.SendInitialEvents != nil && *o.SendInitialEvents {
					// A streaming watch-list would replay current state as adds; refuse it
					// so the reflector falls back to LIST (our snapshot) + WATCH from it.
					return nil, errors.New("watch-list disabled for this measurement")
				}
				watchStart.CompareAndSwap(0, time.Now().UnixNano())
				return client.CoreV1().ConfigMaps(*namespace).Watch(ctx, o)
			},
		}
		var updates atomic.Int64
		done := make(chan struct{})
		inf2 := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
		_, _ = inf2.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(oldObj, newObj any) {
				if updates.Add(1) == int64(*objects) {
					close(done)
				}
			},
		})
		stop2 := make(chan struct{})
		go inf2.Run(stop2)
		select {
		case <-done:
			el := time.Since(time.Unix(0, watchStart.Load())).Seconds()
			out["events"] = *objects
			out["events_per_s"] = float64(*objects) / el
		case <-time.After(120 * time.Second):
			out["events_error"] = fmt.Sprintf("timed out after %d updates", updates.Load())
		}
		close(stop2)
	}
	enc := json.NewEncoder(os.Stdout)
	_ = enc.Encode(out)
}
