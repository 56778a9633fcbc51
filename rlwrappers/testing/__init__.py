"""Contract checks that every perturbation wrapper passes."""
