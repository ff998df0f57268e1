"""A prioritizer for tests: the least linked-to URL first."""


class FewestInlinks:
    def score(self, request, inlinks):
        return -inlinks
