package cache

// ReflectorStore is what a Reflector writes to: a queue or a store.
type ReflectorStore interface {
	// Add records that obj was created.
	Add(obj interface{}) error
	// Update records that obj changed.
	Update(obj interface{}) error
	// Delete records that obj was deleted.
	Delete(obj interface{}) error
	// Replace records a full list, observed at the given resource version.
	Replace([]interface{}, string) error
	// Resync asks for every known object to be processed again.
	Resync() error
}

// ReflectorBookmarkStore is implemented by stores that want to hear about
// watch bookmarks: the resource version moved without any object changing.
type ReflectorBookmarkStore interface {
	// Bookmark records that the watch reached resourceVersion.
	Bookmark(resourceVersion string) error
}
