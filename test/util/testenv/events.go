package testenv

import (
	"context"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EventNotes returns the notes of the events.k8s.io events with reason about the
// object namespace/name, as kubectl events shows them.
func EventNotes(ctx context.Context, c client.Reader, namespace, name, reason string) ([]string, error) {
	var events eventsv1.EventList
	if err := c.List(ctx, &events, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var notes []string
	for _, e := range events.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			notes = append(notes, e.Type+": "+e.Note)
		}
	}
	return notes, nil
}
