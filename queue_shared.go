package cache

import (
	"time"

	"k8s.io/klog/v2"
)

// callProcess runs fn, a call of the user's process function. A panic is
// not recovered, as in client-go: it leaves Pop (the queue's lock released
// and the popped item counted as consumed) and reaches the consumer's
// goroutine, where the controller hands it to utilruntime.HandleCrash.
func callProcess(fn func() error) error {
	return fn()
}

// knownObjectForSync returns the object knownObjects holds under key for a
// resync, and whether there is one. Failures are logged and skip the key.
// Lock order as for lastKnownState.
func knownObjectForSync(logger klog.Logger, knownObjects KeyGetter, key string) (interface{}, bool) {
	obj, exists, err := knownObjects.GetByKey(key)
	switch {
	case err != nil:
		logger.Error(err, "Lookup in known objects failed; the object is not resynced", "key", key)
		return nil, false
	case !exists:
		logger.V(2).Info("Key vanished from known objects; the object is not resynced", "key", key)
		return nil, false
	}
	return obj, true
}

const (
	// slowDepth is the backlog above which slow processing is reported: a
	// slow process function then delays many waiting items.
	slowDepth = 10
	// slowPerItem is how long processing one item may take before it is
	// reported, when the backlog is deeper than slowDepth.
	slowPerItem = 100 * time.Millisecond
	// slowBatchCap caps the allowance of a batch.
	slowBatchCap = time.Second
)

// reportSlowProcessing logs a process call that took longer than
// its allowance while more than slowDepth items were waiting behind it.
func reportSlowProcessing(logger klog.Logger, key string, items, depth int, took time.Duration) {
	if depth <= slowDepth {
		return
	}
	allowance := min(slowPerItem*time.Duration(items), slowBatchCap)
	if took <= allowance {
		return
	}
	logger.Info("Slow processing is holding up the queue", "key", key, "items", items, "depth", depth, "took", took)
}

// transformEntering applies transformer (nil: none) to obj, the object of
// key, as it enters a queue. A tombstone is left as is: its object came
// from the queue or from the known objects and was transformed on its way
// in. A panic in transformer is returned as an error.
func transformEntering(transformer TransformFunc, key string, obj interface{}) (interface{}, error) {
	if transformer == nil {
		return obj, nil
	}
	if _, ok := obj.(DeletedFinalStateUnknown); ok {
		return obj, nil
	}
	out, err := callTransform(transformer, obj)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// stageObject readies obj to enter a queue: it computes obj's key with
// keyOf, a failure being a KeyError, then applies transform (nil: none),
// see transformEntering. Both steps run user code, so queues stage objects
// before taking their lock; the error names the failing step.
func stageObject(keyOf func(interface{}) (string, error), transform TransformFunc, obj interface{}) (string, interface{}, error) {
	key, err := keyOf(obj)
	if err != nil {
		return "", nil, KeyError{Obj: obj, Err: err}
	}
	out, err := transformEntering(transform, key, obj)
	return key, out, err
}

// stagePrefix stages the objects of list in order, as stageObject does,
// until one fails: it returns the objects staged before the failure and
// the failure, or every object and nil. keyFailed tells a key failure (a
// KeyError) from a transform failure. Queues stage before taking their
// lock, so user code runs unlocked, then queue what client-go would have
// queued before the failure.
func stagePrefix(list []interface{}, keyOf func(interface{}) (string, error), transform TransformFunc) (staged []keyedObject, keyFailed bool, err error) {
	staged = make([]keyedObject, 0, len(list))
	for _, obj := range list {
		key, err := keyOf(obj)
		if err != nil {
			return staged, true, KeyError{Obj: obj, Err: err}
		}
		out, err := transformEntering(transform, key, obj)
		if err != nil {
			return staged, false, err
		}
		staged = append(staged, keyedObject{key: key, obj: out})
	}
	return staged, false, nil
}

// listPreparer is implemented by the queues (DeltaFIFO and RealFIFO). A
// Reflector feeding one hands it every listed object as it arrives, then the
// prepared list.
type listPreparer interface {
	// prepareListed returns what the queue's Replace would queue for obj:
	// obj transformed by the queue's transformer, or, when the objects
	// cached by the queue's consumer hold the same version of it, the cached
	// object. It fails where Replace would fail because of obj, with
	// Replace's error.
	prepareListed(obj interface{}) (interface{}, error)
	// replaceTransformed is Replace for a list of prepared objects: it does
	// not transform them again.
	replaceTransformed(list []interface{}, resourceVersion string) error
	// preparesListed reports whether the queue's objects may be prepared
	// one by one as a list arrives. It is false where client-go's Replace
	// can fail partway and leave part of the list queued (DeltaFIFO, and
	// RealFIFO without AtomicEvents or value sharing): the Reflector then
	// hands such a queue the list as listed, and its Replace does exactly
	// what client-go's does, failures included.
	preparesListed() bool
	// streamTransformer is the transform a streaming list applies to each
	// object as it arrives, before prepareListed transforms the result
	// again: the transform the queue's owner gave, or nil.
	streamTransformer() TransformFunc
}
