package main

import (
	"fmt"
	"io"
	"time"
)

// printRealPlan shows what real mode planted at Stripe and in the table, how, and what it left
// out.
func printRealPlan(out io.Writer, schema string, p plan, left []leftOut, rs *realStripe, took time.Duration) {
	intents := rs.creates.Load()
	fmt.Fprintf(out, "Planted with stripe-go in %s: %d PaymentIntents, %d API calls (%d creates, %d cancels, %d refunds), each with the metadata\n",
		took.Round(time.Millisecond), intents, intents+rs.cancels.Load()+rs.refunds.Load(), intents, rs.cancels.Load(), rs.refunds.Load())
	fmt.Fprintf(out, "%s=%s. Loaded %d payments into %s.payments, each created when its PaymentIntent was (by\n",
		metadataKey, rs.runID, len(p.payments), schema)
	fmt.Fprintf(out, "Stripe's clock) and last changed %s ago, and %d PaymentIntents no row refers to, one of them made just before\n",
		spell(realUpdatedAgo), len(p.stripeOnly))
	fmt.Fprintf(out, "the reverse scan, with this drift planted:\n")
	fmt.Fprintf(out, "  %-38s %6s  %-20s %-41s %s\n", "story", "count", "local", "Stripe", "the reconciler must say")
	for i := range stories {
		s := &stories[i]
		if p.counts[i] == 0 {
			continue
		}
		local, external, expect := s.columns()
		fmt.Fprintf(out, "  %-38s %6d  %-20s %-41s %s\n", realName(s), p.counts[i], local, external, expect)
	}
	fmt.Fprintf(out, "\n  How each story's PaymentIntents were made, with Stripe's test payment methods:\n")
	for i := range stories {
		s := &stories[i]
		if r, cannot := recipeOf(s); cannot == "" && p.counts[i] > 0 {
			fmt.Fprintf(out, "    %-38s  %s\n", realName(s), r.made)
		}
	}
	if len(left) > 0 {
		fmt.Fprintf(out, "\nLeft out in real mode, their rows planted as %q instead:\n", stories[0].name)
		for _, l := range left {
			fmt.Fprintf(out, "    %-38s  %s: %s\n", l.story.name, plural(l.rows, "row"), l.cannot)
		}
	}
}

// realName is the story's name in real mode, where the checkout under way is a moment old.
func realName(s *story) string {
	if s.young {
		return "only at Stripe, created a moment ago"
	}
	return s.name
}
