"""What ChunkLens gives people to take away, and reads back: figures, the HTML report and its pages, page images
with a chunk's boxes, chunk exports and library archives. Nothing below the app's use cases imports it."""
