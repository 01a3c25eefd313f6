"""The shape of the tree: node kinds, directory listings, the document index, the
type catalog, file names and extended-attribute names."""
