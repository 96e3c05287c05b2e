// Command driver builds and reads the cluster of make bench-programs on
// kas (KUBECONFIG):
//
//	driver setup -nodes N -pods P -out setup.json   nodes, then (once Ready) pods, then waits until every pod runs
//	             [-nodes-first=false] [-wait D]  nodes and pods at once; the longest wait
//	driver endstate -out state.txt                  the cluster as sorted lines, for comparing runs
//	driver perturb -nodes N                          moves and taints nodes for the descheduler
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	nodes := fs.Int("nodes", 200, "KWOK nodes")
	pods := fs.Int("pods", 20000, "pods")
	out := fs.String("out", "", "output file")
	workers := fs.Int("workers", 16, "parallel creates")
	nodesFirst := fs.Bool("nodes-first", true, "setup: create the pods once every node is Ready")
	wait := fs.Duration("wait", 45*time.Minute, "setup: the longest wait for the nodes, and for the pods")
	_ = fs.Parse(os.Args[2:])
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	c, err := client()
	if err == nil {
		p := plan{nodes: *nodes, pods: *pods}
		switch os.Args[1] {
		case "setup":
			err = setup(ctx, c, p, setupOptions{workers: *workers, nodesFirst: *nodesFirst, wait: *wait}, *out)
		case "endstate":
			err = writeEndState(ctx, c, *out)
		case "perturb":
			err = perturb(ctx, c, p)
		default:
			usage()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "driver %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: driver setup|endstate|perturb [flags]")
	os.Exit(2)
}

// client is a clientset on KUBECONFIG, fast enough to create 20,000 pods
// at the server's pace.
func client() (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return nil, fmt.Errorf("loading KUBECONFIG: %w", err)
	}
	cfg.QPS, cfg.Burst = 2000, 4000
	return kubernetes.NewForConfig(cfg)
}
