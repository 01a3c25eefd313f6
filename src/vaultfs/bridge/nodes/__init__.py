"""The node families: what each kind of node does, one module per family.

A family is the handler of the nodes whose keys share one key type (``tree.keys``):
it lists them, finds names in them, gives their attributes, opens them, shows their
fields, and makes, removes and renames names in them, as far as that family has such
operations (``family``). ``registry`` maps each key type to its family, one line a
family; ``fs.filesystem`` and ``fs.overlay`` find a node's family there, from its
key's type, once per operation, and never test kinds themselves. What a family answers
is the file system's contract (``fs.families``): the families import it, the file
system imports nothing of this package.
"""
