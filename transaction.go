package cache

import "fmt"

// TransactionType is the kind of one change in a Transaction.
type TransactionType string

// The changes a Transaction can carry.
const (
	TransactionTypeAdd    TransactionType = "Add"
	TransactionTypeUpdate TransactionType = "Update"
	TransactionTypeDelete TransactionType = "Delete"
)

// Transaction is one change applied as part of a batch.
type Transaction struct {
	Object interface{}
	Type   TransactionType
}

// TransactionStore applies a batch of changes under one lock, so readers see
// either none or all of them.
type TransactionStore interface {
	// Transaction applies txns in order; changes whose key cannot be
	// computed are skipped and reported in the error, the rest are applied.
	Transaction(txns ...Transaction) *TransactionError
}

// TransactionError reports the changes of a batch that were not applied.
type TransactionError struct {
	// SuccessfulIndices lists the positions of the applied changes.
	SuccessfulIndices []int
	// TotalTransactions is the size of the batch.
	TotalTransactions int
	// Errors holds one error per change that was not applied.
	Errors []error
}

// Error says how many changes failed and why.
func (t *TransactionError) Error() string {
	return fmt.Sprintf("failed to execute (%d/%d) transactions failed due to: %v",
		t.TotalTransactions-len(t.SuccessfulIndices), t.TotalTransactions, t.Errors)
}
