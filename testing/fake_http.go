package framework

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// HTTPHandler serves a ListerWatcher over HTTP the way kube-apiserver
// serves a collection on the wire, so that a real client (client-go's
// clientset or REST client) can talk to a FakeControllerSource: a GET is a
// list, answered with the encoded list object; a GET with watch=true (or
// 1) is a watch, answered with a stream of JSON metav1.WatchEvent frames
// that lasts until the watch ends or the client goes away. The query
// becomes the call's metav1.ListOptions; the path is not looked at, so one
// handler serves one resource at whatever path it is mounted. An API error
// (apierrors.APIStatus) is answered with its code and encoded
// metav1.Status, any other error with a 500.
type HTTPHandler struct {
	// Source answers the requests.
	Source ListerWatcher
	// Encoder encodes lists, objects and statuses for the wire, with
	// apiVersion and kind set: for core types, client-go's
	// scheme.Codecs.LegacyCodec(v1.SchemeGroupVersion), or the same built
	// from a scheme holding k8s.io/api/core/v1.
	Encoder runtime.Encoder
}

// ServeHTTP answers one request.
func (h HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		h.fail(w, apierrors.NewMethodNotSupported(metav1.SchemeGroupVersion.WithResource("").GroupResource(), r.Method))
		return
	}
	query := r.URL.Query()
	var opts metav1.ListOptions
	if err := metav1.Convert_url_Values_To_v1_ListOptions(&query, &opts, nil); err != nil {
		h.fail(w, apierrors.NewBadRequest(fmt.Sprintf("reading the query: %v", err)))
		return
	}
	if opts.Watch {
		h.serveWatch(w, r, opts)
		return
	}
	list, err := h.Source.List(opts)
	if err != nil {
		h.fail(w, err)
		return
	}
	body, err := runtime.Encode(h.Encoder, list)
	if err != nil {
		h.fail(w, fmt.Errorf("encoding the list: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// serveWatch streams one watch until it ends or the client goes away.
func (h HTTPHandler) serveWatch(w http.ResponseWriter, r *http.Request, opts metav1.ListOptions) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		h.fail(w, errors.New("the response writer cannot stream: it does not flush"))
		return
	}
	watcher, err := h.Source.Watch(opts)
	if err != nil {
		h.fail(w, err)
		return
	}
	defer watcher.Stop()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	// Each frame is a metav1.WatchEvent as one JSON document, which is
	// how client-go's JSON stream decoder reads them.
	enc := json.NewEncoder(w)
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-watcher.ResultChan():
			if !ok || h.writeEvent(enc, ev) != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// writeEvent writes ev as one frame. It encodes a copy of the event's
// object: every watch of a source gets the same object, and a scheme's
// codec writes the TypeMeta of what it encodes, so that concurrent watches
// would race on it.
func (h HTTPHandler) writeEvent(enc *json.Encoder, ev watch.Event) error {
	obj := ev.Object
	if obj != nil {
		obj = obj.DeepCopyObject()
	}
	raw, err := runtime.Encode(h.Encoder, obj)
	if err != nil {
		return fmt.Errorf("encoding a watch event's object: %w", err)
	}
	return enc.Encode(&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}})
}

// fail answers with err: its status when it is an API error, else a 500.
func (h HTTPHandler) fail(w http.ResponseWriter, err error) {
	var apiStatus apierrors.APIStatus
	if !errors.As(err, &apiStatus) {
		apiStatus = apierrors.NewInternalError(err)
	}
	status := apiStatus.Status()
	body, encErr := runtime.Encode(h.Encoder, &status)
	if encErr != nil {
		http.Error(w, status.Message, int(status.Code))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(status.Code))
	_, _ = w.Write(body)
}
