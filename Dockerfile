# One image for every Croupier service; docker-compose.yml picks the service with its command.
FROM python:3.11-slim
WORKDIR /app
# setup.py declares the optional compiled odds kernel: built where the image has a C compiler, else skipped
# with a warning (the numpy path gives the same counts; docs/odds-engine.md)
COPY pyproject.toml setup.py README.md ./
COPY baccarat ./baccarat
COPY contracts ./contracts
COPY services ./services
COPY croupier ./croupier
RUN pip install --no-cache-dir .
ENV KAFKA_BOOTSTRAP_SERVERS=kafka:9092
CMD ["croupier", "serve"]
