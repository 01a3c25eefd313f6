"""The names of the mount beyond the vault's tree: the overlay every read goes through.

``overlay`` lays the mount's own names over the tree's listings (scratch files and new
folders, aliases, names hidden for a while); ``scratch`` keeps the scratch files and
new folders themselves. Nothing here writes to the vault: what a new name becomes is
``write``'s, what each kind of node does is its family's (``bridge.nodes``).
"""
