// Command etcd is upstream etcd's own entry point (etcdmain.Main), built from the
// version pinned in ../go.mod so that the harness needs no prebuilt download.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
