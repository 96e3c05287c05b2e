package integration

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// stepAnnotation holds the number of the last update a writer applied, so
// that a write whose answer was lost can be recognised on a re-read.
const stepAnnotation = "kcache.io/step"

// written is what the writers did to one object: the resource versions
// the server gave its creation and each update, and whether it was deleted.
type written struct {
	key     string
	uid     types.UID
	rvs     []uint64
	deleted bool
}

// ledger records every write of a workload; writers update it concurrently.
type ledger struct {
	writes atomic.Int64 // successful creates, updates and deletes

	// mu guards objects.
	mu      sync.Mutex
	objects map[types.UID]*written
}

func newLedger() *ledger {
	return &ledger{objects: map[types.UID]*written{}}
}

func (l *ledger) recordWrite(obj metav1.Object) {
	s := stateOf(obj)
	l.writes.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.objects[s.UID]
	if !ok {
		w = &written{key: objectKey(obj), uid: s.UID}
		l.objects[s.UID] = w
	}
	w.rvs = append(w.rvs, s.RV)
}

func (l *ledger) recordDelete(uid types.UID) {
	l.writes.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if w, ok := l.objects[uid]; ok {
		w.deleted = true
	}
}

// all returns copies of every record.
func (l *ledger) all() []written {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]written, 0, len(l.objects))
	for _, w := range l.objects {
		c := *w
		c.rvs = append([]uint64(nil), w.rvs...)
		out = append(out, c)
	}
	return out
}

// filter returns a new ledger holding copies of the records keep accepts.
func (l *ledger) filter(keep func(written) bool) *ledger {
	out := newLedger()
	for _, w := range l.all() {
		if keep(w) {
			out.objects[w.uid] = &w
		}
	}
	return out
}

// writer performs one kind's writes with retries that survive an API
// server restart: a write whose outcome is unknown (connection cut,
// timeout, 5xx, 429) is retried, and a retry that finds its own earlier
// write already applied adopts it instead of failing.
type writer struct {
	kind   kindClient
	ledger *ledger
}

// retryBudget bounds how long one write keeps retrying.
const retryBudget = 2 * time.Minute

// transient reports whether err leaves a write's outcome unknown, so that
// retrying (and checking) is right.
func transient(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true // transport errors: connection refused or reset, EOF
	}
	code := status.Status().Code
	return code >= 500 || code == 429 || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}

// retry calls op until it returns a non-transient result or the budget is
// spent; op's own definite errors end the retries at once.
func retry(ctx context.Context, what string, op func(ctx context.Context) error) error {
	var last error
	backoff := wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Steps: 1 << 30, Cap: 2 * time.Second}
	deadline := time.Now().Add(retryBudget)
	for {
		opCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := op(opCtx)
		cancel()
		if err == nil || !transient(err) {
			return err
		}
		last = err
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: still failing after %s: %w", what, retryBudget, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), last)
		case <-time.After(backoff.Step()):
		}
	}
}

// create creates obj and returns what the server stored.
func (w *writer) create(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
	var created metav1.Object
	err := retry(ctx, "create "+objectKey(obj), func(ctx context.Context) error {
		var err error
		created, err = w.kind.create(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			// An earlier attempt got through; names are unique to this
			// writer, so the object found is ours.
			created, err = w.kind.get(ctx, obj.GetNamespace(), obj.GetName())
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	w.ledger.recordWrite(created)
	return created, nil
}

// update applies change to obj (the latest version this writer holds),
// marks it with the next step number and writes it. It returns the new
// version.
func (w *writer) update(ctx context.Context, obj metav1.Object, change func(metav1.Object)) (metav1.Object, error) {
	step := nextStep(obj)
	current := obj
	var updated metav1.Object
	err := retry(ctx, "update "+objectKey(obj), func(ctx context.Context) error {
		change(current)
		setStep(current, step)
		var err error
		updated, err = w.kind.update(ctx, current)
		if err == nil || !(apierrors.IsConflict(err) || transient(err)) {
			return err
		}
		// Unknown outcome or a conflict with our own lost write: re-read.
		fresh, getErr := w.kind.get(ctx, obj.GetNamespace(), obj.GetName())
		if getErr != nil {
			return getErr
		}
		if fresh.GetUID() == obj.GetUID() && fresh.GetAnnotations()[stepAnnotation] == strconv.Itoa(step) {
			updated = fresh
			return nil
		}
		current = fresh
		return err
	})
	if err != nil {
		return nil, err
	}
	w.ledger.recordWrite(updated)
	return updated, nil
}

// delete deletes obj if it still is the same object.
func (w *writer) delete(ctx context.Context, obj metav1.Object) error {
	err := retry(ctx, "delete "+objectKey(obj), func(ctx context.Context) error {
		err := w.kind.delete(ctx, obj.GetNamespace(), obj.GetName(), obj.GetUID())
		if apierrors.IsNotFound(err) {
			return nil // an earlier attempt got through
		}
		return err
	})
	if err != nil {
		return err
	}
	w.ledger.recordDelete(obj.GetUID())
	return nil
}

func nextStep(obj metav1.Object) int {
	n, _ := strconv.Atoi(obj.GetAnnotations()[stepAnnotation])
	return n + 1
}

func setStep(obj metav1.Object, step int) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[stepAnnotation] = strconv.Itoa(step)
	obj.SetAnnotations(a)
}

// noChange is an update that only bumps the step annotation.
func noChange(metav1.Object) {}

// forEach runs fn on every item with at most parallel calls at once and
// returns the first error.
func forEach[T any](parent context.Context, items []T, parallel int, fn func(ctx context.Context, item T) error) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	next := make(chan T)
	errs := make(chan error, parallel)
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for item := range next {
				if err := fn(ctx, item); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		})
	}
feed:
	for _, item := range items {
		select {
		case next <- item:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return parent.Err()
}
