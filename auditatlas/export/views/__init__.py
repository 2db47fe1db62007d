"""One module per covered page: ``build(doc, query, link)`` writes the page's view into the document."""
